"""A demo database: a small software company's OKRs over two cycles, with ten weeks of history.

`okr demo` (okr/cli/demo.py) calls create_demo. The data goes in through the
service's own code: users through `okr users add`'s functions, everything else
as requests to the API (the app's test client), so the API's schemas validate
every value and its views write every row. Only the clock is set: each write
is dated where it belongs in the past, so that the dashboard's charts, stale
flags and statuses all have something to show. Last, every user is given the
same password (which turns sign-in on), so that anyone trying the demo can sign
in as any of them: the CEO as an admin, everyone else as an editor.

A demo database is marked with SQLite's application_id (DEMO_APPLICATION_ID),
which SQLite keeps in the file's header: `okr demo` uses no file without it,
and the mark survives `okr backup`.
"""
import os
import random
import secrets
import sqlite3
import tempfile
import urllib.parse
from contextlib import closing, contextmanager
from datetime import datetime, timedelta, timezone
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

from .. import db as okr_db
from ..accounts import passwords
from ..clock import stamped_time
from ..store import database as database_rows
from ..store import events as activity
from ..store import users
from .users import validated_user

# "OKRD": PRAGMA application_id of every demo database, in its header's bytes 68-71.
DEMO_APPLICATION_ID = 0x4F4B5244
SQLITE_MAGIC = b"SQLite format 3\x00"

COMPANY_DOMAIN = "tallybird.example"  # .example is reserved: no real address
TEAMS = ("Product", "Engineering", "Sales", "Customer Success")
# (name, team); the first is the CEO. (Teams list no members: the team is what their objectives name.)
USERS = (
    ("Elena Marsh", None), ("Maya Okafor", "Product"), ("Daniel Reyes", "Product"),
    ("Priya Raman", "Engineering"), ("Tom Becker", "Engineering"), ("Lena Fischer", "Engineering"),
    ("Marcus Hale", "Sales"), ("Sofia Lindqvist", "Sales"), ("Omar Haddad", "Sales"),
    ("Grace Kim", "Customer Success"), ("Jonas Weber", "Customer Success"), ("Aisha Bello", "Customer Success"),
)
# The one admin, the CEO; everyone else is an editor.
ADMIN = USERS[0][0]
# The demo password's characters: no l, o, 0 or 1, which read alike.
READABLE = "abcdefghijkmnpqrstuvwxyz23456789"

# How a key result goes over the cycle:
#   done     reaches its target (progress 1), confidence high
#   good     most of the way (progress 0.6 to 0.9), on track
#   behind   a third of the way or so, at risk
#   stuck    no progress at all (0), off track
#   inside / outside   a range key result that ends inside or outside its range
#   pending  a milestone not reached (0), at risk
#   measure  a baseline: measured, no target
# A key result marked stale stopped being checked in three weeks before the last check-in.


def kr(name, kind, start, target, decimals, scenario, stale=False, counts=False):
    """A key result's script. target: a value, a (min, max) pair for a range, None otherwise.

    counts: a running count, which never goes down.
    """
    return {"name": name, "type": kind, "start": Decimal(start), "target": target, "decimals": decimals,
            "scenario": scenario, "stale": stale, "counts": counts}


# Each cycle's objectives, in the order they are made: (kind, name, owner, team, parent's index,
# description, key results). kind: company, team or personal.
LAST_CYCLE = (
    ("company", "Reach $1M in annual recurring revenue", "Elena Marsh", None, None,
     "The number the next funding round will be judged on.", (
         kr("Annual recurring revenue ($)", "positive", "780000", "1000000", 0, "good"),
         kr("New paying accounts", "positive", "0", "600", 0, "done", counts=True),
         kr("Gross revenue churn (%)", "negative", "2.9", "2.0", 1, "behind"),
     )),
    ("company", "Keep the customers we have", "Grace Kim", None, None,
     "Every account we lose costs us three new ones to replace.", (
         kr("Logo retention (%)", "range", "94.1", ("95", "100"), 1, "inside"),
         kr("Accounts with a named contact in Customer Success (%)", "positive", "20", "100", 0, "done",
            counts=True),
         kr("Average customer health score", "baseline", "71.5", None, 1, "measure"),
     )),
    ("team", "Launch the mobile invoicing app", "Maya Okafor", "Product", 0,
     "Customers asked for it more than for anything else last year.", (
         kr("Mobile app live in both app stores", "milestone", "0", None, 0, "done"),
         kr("Invoices sent from mobile (% of all)", "positive", "0", "15", 1, "behind"),
         kr("App store rating", "range", "4.1", ("4.3", "5.0"), 1, "inside"),
     )),
    ("team", "Release every day without drama", "Priya Raman", "Engineering", 1,
     "Small, boring releases: fewer incidents, faster fixes for customers.", (
         kr("Deploys per week", "positive", "4", "20", 0, "done"),
         kr("Failed deploys (%)", "negative", "12", "3", 1, "good"),
         kr("Mean time to restore service (minutes)", "negative", "90", "30", 0, "stuck"),
     )),
    ("team", "Open the UK market", "Marcus Hale", "Sales", 0,
     "VAT-ready invoicing and a first local sales motion.", (
         kr("UK paying accounts", "positive", "0", "80", 0, "behind", counts=True),
         kr("UK VAT invoicing released", "milestone", "0", None, 0, "done"),
         kr("UK partner agencies signed", "positive", "0", "5", 0, "stuck", counts=True),
     )),
    ("team", "Answer every customer within an hour", "Grace Kim", "Customer Success", 1,
     None, (
         kr("Median first response time (minutes)", "negative", "140", "60", 0, "done"),
         kr("Tickets answered within an hour (%)", "positive", "48", "90", 0, "good"),
         kr("Support satisfaction, CSAT (%)", "range", "88", ("90", "100"), 0, "outside"),
     )),
    ("personal", "Automate the release pipeline", "Tom Becker", "Engineering", 3, None, (
        kr("Manual steps left in a release", "negative", "14", "0", 0, "done"),
        kr("Pipeline duration (minutes)", "negative", "38", "15", 0, "behind"),
        kr("Rollback runbook written", "milestone", "0", None, 0, "done"),
    )),
    ("personal", "Build the partner referral channel", "Omar Haddad", "Sales", 4, None, (
        kr("Referral partners signed", "positive", "0", "10", 0, "behind", counts=True),
        kr("Referred trials", "positive", "0", "150", 0, "good", counts=True),
        kr("Partner portal launched", "milestone", "0", None, 0, "pending"),
    )),
    ("personal", "Write the help centre from scratch", "Aisha Bello", "Customer Success", 5, None, (
        kr("Help articles published", "positive", "0", "120", 0, "done", counts=True),
        kr("Tickets solved by self-service (%)", "positive", "5", "25", 1, "good"),
        kr("Help centre searches with no result (%)", "negative", "30", "10", 1, "stuck"),
    )),
    ("personal", "Run thirty customer interviews", "Daniel Reyes", "Product", 2, None, (
        kr("Customer interviews held", "positive", "0", "30", 0, "done", counts=True),
        kr("Interview notes shared with the team", "positive", "0", "30", 0, "good", counts=True),
        kr("Top ten pain points ranked and shared", "milestone", "0", None, 0, "done"),
    )),
)

THIS_CYCLE = (
    ("company", "Grow self-serve revenue", "Elena Marsh", None, None,
     "Most new revenue should come from customers who sign up and pay without talking to sales.", (
         kr("Self-serve monthly recurring revenue ($)", "positive", "61000", "85000", 0, "good"),
         kr("Trial-to-paid conversion (%)", "positive", "8.5", "12", 1, "behind"),
         kr("Monthly churn of self-serve accounts (%)", "negative", "3.1", "2.0", 1, "good"),
     )),
    ("company", "Make new customers successful in their first month", "Grace Kim", None, None,
     "An account that sends three invoices in its first month almost never leaves.", (
         kr("New accounts that send an invoice in week one (%)", "positive", "41", "60", 0, "behind"),
         kr("Net promoter score of new accounts", "positive", "32", "45", 0, "good"),
         kr("Support tickets per new account in month one", "negative", "2.8", "1.5", 1, "stuck"),
     )),
    ("team", "Ship a checkout that converts", "Maya Okafor", "Product", 0,
     "One page, three fields, every payment method our customers asked for.", (
         kr("Checkout completion rate (%)", "positive", "54", "70", 1, "good"),
         kr("New checkout live for all customers", "milestone", "0", None, 0, "done"),
         kr("Median time to finish checkout (seconds)", "negative", "95", "60", 0, "done"),
     )),
    ("team", "Make the app fast and reliable", "Priya Raman", "Engineering", 1,
     "Speed is the feature new customers notice first.", (
         kr("p95 page load time (seconds)", "negative", "2.4", "1.0", 2, "behind"),
         kr("Monthly uptime (%)", "range", "99.82", ("99.90", "100"), 2, "inside"),
         kr("Open severity-1 bugs", "negative", "7", "0", 0, "behind", stale=True),
     )),
    ("team", "Build a repeatable mid-market pipeline", "Marcus Hale", "Sales", 0,
     None, (
         kr("Qualified mid-market opportunities", "positive", "0", "45", 0, "good", counts=True),
         kr("Sales cycle length (days)", "range", "41", ("20", "35"), 0, "outside"),
         kr("Mid-market sales playbook published", "milestone", "0", None, 0, "pending", stale=True),
     )),
    ("team", "Cut time-to-first-invoice for new accounts", "Grace Kim", "Customer Success", 1,
     "From sign-up to the first invoice sent, in hours.", (
         kr("Median time to first invoice (hours)", "negative", "52", "24", 0, "good"),
         kr("Onboarding checklist completion (%)", "positive", "35", "65", 0, "behind"),
         kr("Onboarding calls booked per week", "baseline", "18", None, 0, "measure"),
     )),
    ("personal", "Redesign the pricing page", "Daniel Reyes", "Product", 2, None, (
        kr("Pricing page to trial click-through (%)", "positive", "3.2", "5.0", 1, "good"),
        kr("New pricing page shipped", "milestone", "0", None, 0, "done"),
        kr("Customer interviews on pricing", "positive", "0", "12", 0, "done", counts=True),
    )),
    ("personal", "Get the invoice list under one second", "Lena Fischer", "Engineering", 3, None, (
        kr("p95 invoice list load time (ms)", "negative", "1800", "1000", 0, "behind"),
        kr("Slow queries fixed", "positive", "0", "15", 0, "good", counts=True),
        kr("Database CPU at peak (%)", "range", "72", ("30", "60"), 0, "inside"),
    )),
    ("personal", "Close my first five annual contracts", "Sofia Lindqvist", "Sales", 4, None, (
        kr("Annual contracts signed", "positive", "0", "5", 0, "behind", counts=True),
        kr("Product demos given", "positive", "0", "40", 0, "behind", stale=True, counts=True),
        kr("Average deal size ($)", "baseline", "9400", None, 0, "measure"),
    )),
    ("personal", "Run a weekly onboarding webinar", "Jonas Weber", "Customer Success", 5, None, (
        kr("Webinars held", "positive", "0", "12", 0, "good", counts=True),
        kr("Average attendees per webinar", "positive", "8", "20", 1, "stuck"),
        kr("Webinar recordings library live", "milestone", "0", None, 0, "pending"),
    )),
)

# What people write when they check in, by how it went.
COMMENTS = {
    "better": (
        "{Direction} {delta} since last week. {reason}", "Good week: {direction} {delta}. {reason}",
        "{Direction} {delta} this week. {reason}", "Moving the right way, {direction} {delta}. {reason}",
    ),
    "worse": (
        "{Direction} {delta} this week, the wrong way. {reason}", "Went the wrong way: {direction} {delta}. {reason}",
        "Slipped: {direction} {delta}. {reason}",
    ),
    "flat": ("No change this week. {reason}", "Flat. {reason}", "Same as last week. {reason}"),
    "done": (
        "Target reached. Keeping an eye on it so it stays there.", "Hit the target this week.",
        "Done, and holding.", "Above target again.",
    ),
    "good_reason": (
        "The onboarding emails are doing their job.", "The pricing experiment helped.",
        "Two bigger accounts went live.", "Steady, nothing unusual.", "Better than expected after Tuesday's release.",
        "The team cleared last week's backlog.", "Word of mouth from the webinar.",
        "The new dashboard shows it clearly.",
        "Paired with Engineering on the slow bits.", "Follow-ups from the conference are converting.",
    ),
    "bad_reason": (
        "Half the team was on the incident.", "Waiting on legal for the new terms.",
        "Holiday week; expect a catch-up.", "The release slipped to next sprint.", "Leads came in but few qualified.",
        "Blocked on the payment provider.", "Priorities changed after the board meeting.",
        "Lost two days to the data migration.", "Need help from Engineering to unblock this.",
    ),
    "milestone_done": ("Shipped to all customers today.", "Live. Thanks everyone who helped!",
                       "Done and announced in the changelog."),
    "milestone_open": (
        "Design review done; build starts Monday.", "QA found two blockers, fixing them this week.",
        "Scoped and estimated.", "Halfway there: the hard part is done.", "Still waiting on the copy.",
        "Demoed internally; a few rough edges left.",
    ),
    "inside": ("Inside the range.", "Comfortably inside the range this week.", "Within range, as planned."),
    "outside": ("Outside the range: {reason}", "Still out of range. {reason}", "Not in range yet. {reason}"),
    "measure": (
        "Logged this week's number.", "Measuring for now; we will set a target next cycle.",
        "Weekly number from the BI dashboard.", "Noted. Seasonal dip expected.",
    ),
}


def header_of(path):
    """The first 100 bytes of a file: SQLite's header, if it is a database."""
    with open(path, "rb") as f:
        return f.read(100)


def not_a_demo_database(path):
    """Why the existing file at path is not a demo database, in a few words; None if it is one.

    Only reads its header: nothing, not even SQLite, opens the file.
    """
    if os.path.isdir(path):
        return "it is a folder"
    try:
        header = header_of(path)
    except OSError as error:
        return f"it cannot be read: {error.strerror}"
    if not header:
        return "it is an empty file"
    if not header.startswith(SQLITE_MAGIC) or len(header) < 100:
        return "it is not an SQLite database"
    if int.from_bytes(header[68:72], "big") != DEMO_APPLICATION_ID:
        return "okr demo did not make it"
    return None


def quarter_name(day):
    return f"Q{(day.month - 1) // 3 + 1} {day.year}"


def previous_quarter_name(day):
    first = datetime(day.year, (day.month - 1) // 3 * 3 + 1, 1)
    return quarter_name(first - timedelta(days=1))


class Script:
    """The demo's writes, each with its time: a seeded random source makes the values and the times."""

    def __init__(self, seed, now):
        self.rng = random.Random(seed)
        # This cycle began on a Monday ten weeks before this week's; the last began 13 weeks earlier.
        monday = (now - timedelta(days=now.weekday())).replace(hour=8, minute=0, second=0, microsecond=0)
        self.this_start = monday - timedelta(weeks=10)
        self.last_start = self.this_start - timedelta(weeks=13)
        self.events = []  # (time, order, kind, data)

    def at(self, day, hour, minute=None):
        """A time on a day (a datetime at its midnight or later), at hour and a random minute."""
        minute = self.rng.randrange(60) if minute is None else minute
        return day.replace(hour=hour, minute=minute, second=self.rng.randrange(60))

    def add(self, when, kind, data):
        self.events.append((when, len(self.events), kind, data))

    def build(self):
        """What the API is to write, as (time, order, kind, data) in time order."""
        name = quarter_name(self.this_start + timedelta(days=45))
        cycles = (
            (previous_quarter_name(self.this_start + timedelta(days=45)), self.last_start, LAST_CYCLE,
             [0, 1, 2, 3, 4, 5, 6, 7, 9, 12]),
            (name, self.this_start, THIS_CYCLE, list(range(10))),
        )
        for number, team in enumerate(TEAMS):
            self.add(self.at(self.last_start - timedelta(days=21), 10, 5 * number), "team", {"name": team})
        for cycle_index, (cycle_name, start, objectives, weeks) in enumerate(cycles):
            planning = start - timedelta(days=4)  # the Thursday before
            # Thirteen weeks each: the last one ended the day before this one began.
            dates = {"starts_on": start.date().isoformat(),
                     "ends_on": (start + timedelta(weeks=13, days=-1)).date().isoformat()}
            self.add(self.at(planning, 9, 0), "cycle", {"name": cycle_name, "key": cycle_index, **dates})
            for index, objective in enumerate(objectives):
                self.script_objective(cycle_index, index, objective, planning, weeks)
        self.events.sort(key=lambda event: (event[0], event[1]))
        return self.events

    def script_objective(self, cycle_index, index, objective, planning, weeks):
        kind, name, owner, team, parent, description, key_results = objective
        made = self.at(planning + timedelta(days=index // 5), 10 + index % 5)
        self.add(made, "objective", {
            "key": (cycle_index, index), "parent": None if parent is None else (cycle_index, parent),
            "name": name, "description": description, "is_company": kind == "company",
            "is_personal": kind == "personal", "team": team, "owner": owner,
        })
        for number, script in enumerate(key_results):
            self.script_key_result((cycle_index, index, number), script, made + timedelta(minutes=5 + number),
                                   planning + timedelta(days=4), weeks, owner)

    def script_key_result(self, key, script, made, start, weeks, owner):
        rng = self.rng
        values = self.values(script, len(weeks))
        confidences = self.confidences(script, len(weeks))
        body = {"name": script["name"], "type": script["type"], "current_value": self.text(script["start"], script),
                "confidence": str(confidences[0])}
        target = script["target"]
        if script["type"] in ("positive", "negative"):
            body["target_value_min"] = target
        elif script["type"] == "range":
            body["target_value_min"], body["target_value_max"] = target
        self.add(made, "key_result", {"key": key, "body": body, "owner": owner})
        last = len(weeks) - 3 if script["stale"] else len(weeks)
        previous = script["start"]
        for week, value, confidence in list(zip(weeks, values[1:], confidences[1:]))[:last]:
            # Fridays, in the afternoon mostly.
            when = self.at(start + timedelta(weeks=week, days=4), rng.choice((9, 11, 14, 15, 16, 17)))
            self.add(when, "checkin", {"key": key, "owner": owner, "body": {
                "value": self.text(value, script), "confidence": str(confidence),
                "comment": self.comment(script, previous, value)}})
            previous = value

    # --- values -------------------------------------------------------------------------------

    def text(self, value, script):
        return str(value.quantize(Decimal(1).scaleb(-script["decimals"]), rounding=ROUND_HALF_EVEN))

    def values(self, script, weeks):
        """The starting value and one value per check-in, as Decimals with the script's decimals."""
        rng, kind, start = self.rng, script["type"], script["start"]
        step = Decimal(1).scaleb(-script["decimals"])
        if kind == "milestone":
            reached = rng.randint(weeks - 4, weeks - 1) if script["scenario"] == "done" else weeks + 1
            return [Decimal(0)] + [Decimal(1 if week >= reached else 0) for week in range(weeks)]
        if kind == "baseline":
            values, value = [start], start
            for _ in range(weeks):
                value = max(value * Decimal(1 + rng.uniform(-0.06, 0.06)), Decimal(0))
                values.append(value.quantize(step))
            return values
        if kind == "range":
            return self.range_values(script, weeks, step)
        target = Decimal(script["target"])
        scenario = script["scenario"]
        final = {"done": 1, "good": rng.uniform(0.6, 0.9), "behind": rng.uniform(0.25, 0.5), "stuck": 0}[scenario]
        curve = rng.uniform(0.7, 1.4)
        values = [start]
        for week in range(1, weeks + 1):
            share = week / weeks
            if scenario == "stuck":
                # Some movement early on, back to where it started (or worse) by the end.
                fraction = 0.12 * (share * (1 - share) * 4) + rng.uniform(-0.03, 0.03) - (0.02 if week == weeks else 0)
            else:
                fraction = final * share ** curve + (rng.uniform(-0.04, 0.04) if week < weeks else 0)
            if scenario == "done" and week >= weeks - 1:
                fraction = 1 + rng.uniform(0, 0.05)
            value = start + (target - start) * Decimal(fraction)
            rounding = ROUND_HALF_EVEN
            if scenario == "done" and week == weeks:  # at or past the target, whatever the rounding
                rounding = ROUND_CEILING if target > start else ROUND_FLOOR
            value = max(value.quantize(step, rounding=rounding), Decimal(0))
            if "(%" in script["name"]:
                value = min(value, Decimal(100))
            if script["counts"]:
                value = max(value, values[-1])
            values.append(value)
        if scenario == "stuck" and not script["counts"]:
            values[-1] = start + (start - target) * Decimal("0.03") if start > 0 else start
            values[-1] = max(values[-1].quantize(step), Decimal(0))
        elif scenario == "stuck":
            values = [start] * (weeks + 1)  # a count that never moved
        return values

    def range_values(self, script, weeks, step):
        rng, start = self.rng, script["start"]
        low, high = (Decimal(bound) for bound in script["target"])
        width = high - low
        if script["scenario"] == "inside":
            final = low + width * Decimal(rng.uniform(0.2, 0.8))
        else:  # outside, on the side it started
            final = high + width * Decimal(rng.uniform(0.15, 0.35)) if start > high else low - width * Decimal(
                rng.uniform(0.1, 0.3))
        values = [start]
        for week in range(1, weeks + 1):
            share = Decimal(week / weeks)
            value = start + (final - start) * share
            if week < weeks:
                value += width * Decimal(rng.uniform(-0.15, 0.15))
            values.append(min(max(value, Decimal(0)), Decimal(100) if high <= 100 else value).quantize(step))
        inside = low <= values[-1] <= high
        if inside != (script["scenario"] == "inside"):  # rounding moved it across a bound
            if inside:
                values[-1] = high + step if start > high else low - step
            else:
                values[-1] = ((low + high) / 2).quantize(step)
        return values

    def confidences(self, script, weeks):
        """The confidence at creation and at each check-in, in steps of 0.05."""
        rng, scenario = self.rng, script["scenario"]
        first = rng.choice((0.6, 0.65, 0.7))
        final = {"done": rng.choice((0.95, 1.0)), "good": rng.uniform(0.75, 0.9), "inside": rng.uniform(0.75, 0.9),
                 "measure": rng.uniform(0.7, 0.8), "behind": rng.uniform(0.45, 0.65),
                 "pending": rng.uniform(0.4, 0.6), "stuck": rng.uniform(0.15, 0.3),
                 "outside": rng.uniform(0.2, 0.35)}[scenario]
        confidences = []
        for week in range(weeks + 1):
            share = week / weeks
            value = first + (final - first) * share + (rng.uniform(-0.05, 0.05) if 0 < week < weeks else 0)
            step = Decimal(round(min(max(value, 0.05), 1.0) * 20)) / 20
            confidences.append(step.quantize(Decimal("0.01")))
        return confidences

    def comment(self, script, previous, value):
        rng, kind, scenario = self.rng, script["type"], script["scenario"]
        if kind == "milestone":
            return rng.choice(COMMENTS["milestone_done" if value >= 1 else "milestone_open"])
        if kind == "baseline":
            return rng.choice(COMMENTS["measure"])
        if kind == "range":
            low, high = (Decimal(bound) for bound in script["target"])
            if low <= value <= high:
                return rng.choice(COMMENTS["inside"])
            return rng.choice(COMMENTS["outside"]).format(reason=rng.choice(COMMENTS["bad_reason"]))
        target = Decimal(script["target"])
        reached = value >= target if target > script["start"] else value <= target
        if reached:
            return rng.choice(COMMENTS["done"])
        change = value - previous
        better = change > 0 if target > script["start"] else change < 0
        direction = "up" if change > 0 else "down"
        mood = "flat" if change == 0 else "better" if better else "worse"
        reasons = "good_reason" if better and scenario in ("done", "good") else "bad_reason"
        if better and scenario not in ("done", "good"):
            reasons = rng.choice(("good_reason", "bad_reason"))
        return rng.choice(COMMENTS[mood]).format(delta=f"{abs(change):,}", direction=direction,
                                                 Direction=direction.capitalize(), reason=rng.choice(COMMENTS[reasons]))


def email_of(name):
    return f"{name.lower().replace(' ', '.')}@{COMPANY_DOMAIN}"


ADMIN_EMAIL = email_of(ADMIN)


def new_password():
    """A random password that reads and types easily: four groups of four, such as k7qm-x3fa-9tzp-wd2h
    (80 bits)."""
    return "-".join("".join(secrets.choice(READABLE) for _ in range(4)) for _ in range(4))


@contextmanager
def clock():
    """Sets the time every write stamps (okr.clock.stamped_time): yields a function that sets it; unset on leaving."""
    token = stamped_time.set(None)

    def set_time(when):
        stamped_time.set(when.astimezone(timezone.utc))

    try:
        yield set_time
    finally:
        stamped_time.reset(token)


def fill(app, events, password_hash=None):
    """Writes the events through the service's own code: users as `okr users add` does, the rest through the API.
    Then gives every user password_hash, if any: last, since a password turns sign-in on for the API too."""
    client = app.test_client()
    ids = {}  # the script's keys -> the ids the service gave

    def post(path, body, by=ADMIN):
        # The activity feed shows the demo's people at work: each change is its person's.
        with activity.acting_as({"type": "user", "id": ids[by], "name": by}):
            response = client.post(path, json=body)
        if response.status_code != 200:
            raise RuntimeError(f"the demo data was refused: POST {path} {body} answered {response.get_json()}")
        return response.get_json()["id"]

    with clock() as set_time:
        when = events[0][0] - timedelta(days=30)
        set_time(when)
        with app.app_context(), okr_db.transaction() as db:
            people = []
            for name, _ in USERS:
                user = validated_user(name, email_of(name))
                people.append(users.create(db, user["name"], user["email"], "admin" if name == ADMIN else "editor"))
                ids[name] = people[-1]["id"]
        for when, _, kind, data in events:
            set_time(when)
            if kind == "team":
                ids[data["name"]] = post("/v1/teams", data)
            elif kind == "cycle":
                ids["cycle", data["key"]] = post("/v1/cycles", {
                    "name": data["name"], "starts_on": data["starts_on"], "ends_on": data["ends_on"]})
            elif kind == "objective":
                ids[data["key"]] = post("/v1/objectives", {
                    "name": data["name"], "cycle_id": ids["cycle", data["key"][0]], "is_company": data["is_company"],
                    "is_personal": data["is_personal"], "description": data["description"],
                    "team_id": ids.get(data["team"]), "assignee_id": ids[data["owner"]],
                    "parent_objective_id": ids.get(data["parent"]),
                }, data["owner"])
            elif kind == "key_result":
                ids[data["key"]] = post(f"/v1/objectives/{ids[data['key'][:2]]}/keyresults",
                                        {**data["body"], "owner_id": ids[data["owner"]]}, data["owner"])
            else:
                post(f"/v1/keyresults/{ids[data['key']]}/checkins", {**data["body"], "author_id": ids[data["owner"]]},
                     data["owner"])
    if password_hash is not None:
        with app.app_context(), okr_db.transaction() as db:
            for user in people:
                users.set_password(db, user, password_hash)
    # The test client's requests ran on this thread, which keeps its connection open until closed.
    with app.app_context():
        okr_db.close_thread_connection()


def count_rows(path):
    """{what: how many} of a database, for the command's summary."""
    # Read-write (it is a demo database): a read-only connection would leave -wal and -shm files behind.
    with closing(sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=rw", uri=True)) as db:
        return database_rows.counts(db, ("cycles", "teams", "users", "objectives", "key_results", "checkins"))


def admin_with_password(path):
    """The email of the first active admin with a password in a demo database, or None (none has one, as in a
    demo made before people had passwords)."""
    with closing(sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=rw", uri=True)) as db:
        try:
            return users.first_admin_with_password(db)
        except sqlite3.OperationalError:  # no role or password_hash column yet: okr serve adds them
            return None


def remove_companions(path):
    """Removes the -wal and -shm files a database at path left: SQLite would apply them to a new file there."""
    for suffix in ("-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def create_demo(create_app, path, seed, now=None, replace=False, password=None):
    """Makes a demo database at path, which must not exist (or, with replace, be a demo database).

    create_app is okr's app factory: the data goes in through an app of its own on a private file.

    The data is made from seed, dated relative to now (an aware datetime; the
    present by default): the same seed and now give the same data, ids aside.
    Every user gets password, hashed once for all (hashing takes a tenth of a
    second); with None, no one has a password and the demo stays open.
    It is written to a private file beside path, then moved there whole.
    Returns the counts of what it holds.
    """
    now = (now or datetime.now(timezone.utc)).replace(microsecond=0)
    events = Script(seed, now).build()
    password_hash = None if password is None else passwords.hash_password(password)
    folder = os.path.dirname(os.path.abspath(path))
    handle, partial = tempfile.mkstemp(dir=folder, prefix=".okr-demo-", suffix=".db")
    os.close(handle)
    try:
        app = create_app({"DATABASE": partial})
        with app.app_context():
            okr_db.init_db()
        with closing(sqlite3.connect(partial, isolation_level=None)) as db:
            db.execute(f"PRAGMA application_id = {DEMO_APPLICATION_ID}")
        fill(app, events, password_hash)
        if replace:
            remove_companions(path)
            os.replace(partial, path)
        else:
            remove_companions(path)
            try:
                os.link(partial, path)  # never over a file made meanwhile: FileExistsError
            except FileExistsError:
                raise
            except OSError:  # a file system without hard links
                os.replace(partial, path)
    finally:
        for name in (partial, partial + "-wal", partial + "-shm"):
            if os.path.exists(name):
                os.remove(name)
    return count_rows(path)
