"""The weekly emails: check-in reminders and the team digest, when they are due, and sending each once a week.

A reminder goes to each active person, with weekly emails on, who owns a key result of a current cycle (or
whose assigned objective holds one) that has had no check-in for 7 days (okr.progress.checkin_overdue). The
digest goes to the members of each team that has objectives in a current cycle: per team, its objectives'
progress now and a week ago (okr.reports.alignment.cycle_report and cycle_report_as_of), the week's check-ins with
their comments, and the key results that went off track. Each person gets at most one of each kind a week.

They are due from the weekday and hour of OKR_WEEKLY_MAIL ("monday 09:00") in OKR_TIMEZONE to the end of that
ISO week. Once a week per person: before sending, an email is claimed by a row of weekly_mail (kind,
recipient, week) in a short write transaction of its own, which only one process can insert; a failed send
deletes its claim, so that a later round retries it. A process that dies between its claim and the send
leaves the claim: that person misses that week's email rather than risk getting it twice.

Knows nothing of Flask: it reads a config mapping and opens its own connections.
"""
import logging
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .. import progress
from ..records import cycle_details_json
from ..rules.quantities import shown
from ..reports import alignment
from ..rules import percentages
from ..store import notifications, visibility, weekly_mail
from ..store.schema import connect
from . import smtp

logger = logging.getLogger("okr")

REMINDER, DIGEST = "reminder", "digest"
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# How often the server's background process checks whether the weekly emails are due.
CHECK_EVERY_SECONDS = 60
WEEK = timedelta(days=7)
# The most check-ins and key results listed per team in a digest; the dashboard has them all.
DIGEST_ITEMS_SHOWN = 50


# --- when -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    weekday: int  # 0 for Monday
    hour: int
    minute: int
    zone: ZoneInfo

    def __str__(self):
        return f"{WEEKDAYS[self.weekday].capitalize()} {self.hour:02d}:{self.minute:02d} ({self.zone.key})"


def schedule(config):
    """The Schedule of OKR_WEEKLY_MAIL ("monday 09:00") and OKR_TIMEZONE; MailSettingsError when they are bad."""
    text = str(config.get("WEEKLY_MAIL") or "monday 09:00").strip().lower()
    words = text.split()
    problem = smtp.MailSettingsError(f"OKR_WEEKLY_MAIL must be a weekday and a time, as in \"monday 09:00\", "
                                     f"not {text!r}")
    if len(words) != 2:
        raise problem
    day, time_of_day = words
    matches = [number for number, name in enumerate(WEEKDAYS) if len(day) >= 3 and name.startswith(day)]
    hour, _, minute = time_of_day.partition(":")
    if len(matches) != 1 or not (hour.isdigit() and minute.isdigit() and len(minute) == 2):
        raise problem
    if not (0 <= int(hour) <= 23 and 0 <= int(minute) <= 59):
        raise problem
    name = str(config.get("TIMEZONE") or "UTC").strip()
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise smtp.MailSettingsError(f"OKR_TIMEZONE {name!r} is no time zone: use a name such as UTC or "
                                     "Europe/Paris") from None
    return Schedule(matches[0], int(hour), int(minute), zone)


def week_of(now, zone):
    """The ISO week ("2026-W23") of now (an aware datetime) in the time zone."""
    year, week, _ = now.astimezone(zone).isocalendar()
    return f"{year}-W{week:02d}"


def due_week(now, when):
    """The ISO week whose weekly emails are due at now (from the scheduled weekday and hour to the week's end,
    in the schedule's time zone), or None before that moment of the week."""
    local = now.astimezone(when.zone)
    if (local.weekday(), local.hour, local.minute) >= (when.weekday, when.hour, when.minute):
        return week_of(now, when.zone)
    return None


# --- what -----------------------------------------------------------------------------------------------

def stamp(moment):
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def reminders(db, now):
    """[{"person": user row, "key_results": [report nodes, each with "objective_name" and "cycle"]}]: who is
    reminded of which key results at now, in the order people were added."""
    today = now.date()
    current = alignment.current_cycles(db, today)
    cycles = {row["id"]: cycle_details_json(row, today) for row in current}
    if not cycles:
        return []
    stale = alignment.stale_by_time(now)  # a current cycle is not finished
    pace = alignment.pace_test(current, today)
    waiting = {}
    for row in weekly_mail.cycle_key_results(db, cycles):
        if not progress.checkin_overdue(row["last_checkin_at"], now):
            continue
        node = {**alignment.key_result_node(row, stale, pace)[0], "objective_name": row["objective_name"],
                "cycle": cycles[row["cycle_id"]]}
        for person in {row["owner_id"], row["assignee_id"]} - {None}:
            waiting.setdefault(person, []).append(node)
    if not waiting:
        return []
    people = weekly_mail.reminded(db, waiting)
    return [{"person": person, "key_results": waiting[person["id"]]} for person in people]


def note_due_checkins(config, now, week):
    """Writes a checkin_due notification to each active person whose key results are due a check-in at now (all of
    them, whether they take the weekly emails or not), once a week: each is claimed as a weekly_mail row of kind
    "checkin_due" in the notification's own transaction. Returns how many were written."""
    written = 0
    with closing(connect(config["DATABASE"], config["BUSY_TIMEOUT_MS"])) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            done = weekly_mail.recipients(db, notifications.CHECKIN_DUE, week)
            for person_id in sorted(set(due_people(db, now)) - done):
                weekly_mail.note(db, notifications.CHECKIN_DUE, person_id, week)
                written += len(notifications.notify(db, notifications.CHECKIN_DUE, [person_id]))
            db.execute("COMMIT")
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")
    return written


def due_people(db, now):
    """The ids of the people owning (or assigned the objective of) a key result of a current cycle that had no
    check-in for 7 days, as the reminders find them."""
    today = now.date()
    current = alignment.current_cycles(db, today)
    people = set()
    for row in weekly_mail.cycle_key_results(db, [row["id"] for row in current]) if current else ():
        if progress.checkin_overdue(row["last_checkin_at"], now):
            people |= {row["owner_id"], row["assignee_id"]} - {None}
    return people


def team_digest(db, team, now, base_url=None):
    """A team's week, built once for all its members and for chat (digest_lines, digest_slack_message).

    team: its row (id, name). {"team", "week_ending", "since", "base_url", "objectives": [{"id", "name",
    "cycle", "progress", "progress_week_ago", "new"}], "checkins": [...], "off_track": [{"id", "name",
    "objective_name", "confidence", "was"}]}; progress figures are okr.reports.alignment', as of now and 7 days
    before (None: no progress to show, or the objective did not exist yet).
    """
    week_ago = now - WEEK
    cycles = alignment.current_cycles(db, now.date())
    objectives, off_track = [], []
    for cycle in cycles:
        report = alignment.cycle_report(db, cycle, now, team_id=team["id"])
        before = alignment.cycle_report_as_of(db, cycle, week_ago, team_id=team["id"])
        then = {node["id"]: node for node in alignment.flattened(before["objectives"])}
        statuses_then = {kr["id"]: kr["status"] for node in then.values() for kr in node["key_results"]}
        for node in alignment.flattened(report["objectives"]):
            old = then.get(node["id"])
            objectives.append({"id": node["id"], "name": node["name"], "cycle": cycle["name"],
                               "progress": node["progress"], "new": old is None,
                               "progress_week_ago": None if old is None else old["progress"]})
            for key_result in node["key_results"]:
                was = statuses_then.get(key_result["id"])
                if key_result["status"] == "off_track" and was != "off_track":
                    off_track.append({"id": key_result["id"], "name": key_result["name"],
                                      "objective_name": node["name"], "confidence": key_result["confidence"],
                                      "was": was})
    checkins = [dict(row) for row in weekly_mail.team_checkins(
        db, team["id"], [cycle["id"] for cycle in cycles], stamp(week_ago), stamp(now), DIGEST_ITEMS_SHOWN + 1)]
    return {
        "team": {"id": team["id"], "name": team["name"]},
        "week_ending": now.date().isoformat(),
        "since": week_ago.date().isoformat(),
        "base_url": base_url,
        "objectives": objectives,
        "checkins": checkins[:DIGEST_ITEMS_SHOWN],
        "more_checkins": len(checkins) > DIGEST_ITEMS_SHOWN,
        "off_track": off_track[:DIGEST_ITEMS_SHOWN],
    }


def digests(db, now, base_url=None):
    """[{"person": user row, "digests": [team_digest of each of their teams with objectives]}]: who gets which
    teams' digest at now. A team's digest is built once, whatever its count of members."""
    members = weekly_mail.digest_readers(db)
    cycle_ids = [cycle["id"] for cycle in alignment.current_cycles(db, now.date())]
    built, people = {}, {}
    for row in members:
        # Each reader's as they may see it (okr.store.visibility): built once for all who see the same.
        with visibility.viewing_as(visibility.limit_of(row["id"], row["role"])):
            hidden = frozenset().union(*(visibility.hidden_ids(db, cycle_id) for cycle_id in cycle_ids))
            key = (row["team_id"], hidden)
            if key not in built:
                digest = team_digest(db, {"id": row["team_id"], "name": row["team_name"]}, now, base_url)
                built[key] = digest if digest["objectives"] else None
        if built[key] is not None:
            people.setdefault(row["id"], {"person": row, "digests": []})["digests"].append(built[key])
    return list(people.values())


# --- the words ----------------------------------------------------------------------------------------


def link(base_url, path):
    return f"{base_url}{path}" if base_url else path


def change_figure(now, before):
    """ "+15 points" / "-10 points" / "no change" between two progress figures; None when either is missing."""
    return percentages.points(now, before)


def percent(figure):
    return "no progress to show" if figure is None else percentages.percent(figure)


def reminder_email(entry, base_url):
    """(subject, body) of a person's check-in reminder."""
    person, key_results = entry["person"], entry["key_results"]
    count = len(key_results)
    subject = f"Check-in reminder: {count} key result{'s' if count != 1 else ''} waiting for an update"
    lines = [f"Hello {person['name']},", "",
             f"{'These key results have' if count != 1 else 'This key result has'} had no check-in for "
             f"{progress.NEEDS_UPDATE_AFTER.days} days or more:", ""]
    for node in key_results:
        lines += [f"- {node['name']}",
                  f"  Objective: {node['objective_name']} (cycle {node['cycle']['name']})",
                  f"  Value {shown(node['current_value'], node['unit'], node['unit_position'])}, progress "
                  f"{percent(node['progress'])}, confidence {percentages.percent(node['confidence'])}; last check-in "
                  f"{node['last_checkin_at'][:10]}",
                  f"  Check in: {link(base_url, '/keyresults/' + node['id'])}", ""]
    lines += [f"Your week, with all of them: {link(base_url, '/')}", "", footer(base_url)]
    return subject, "\n".join(lines) + "\n"


def footer(base_url):
    return ("You get this email at most once a week. To turn reminders and digests off, go to your account "
            f"page: {link(base_url, '/account')}")


def digest_lines(digest):
    """The text of one team's digest."""
    base_url = digest["base_url"]
    lines = [f"{digest['team']['name']}: the week from {digest['since']} to {digest['week_ending']}", "",
             "Objectives, progress now (a week ago):"]
    for objective in digest["objectives"]:
        change = change_figure(objective["progress"], objective["progress_week_ago"])
        before = ("new this week" if objective["new"] else
                  f"{percent(objective['progress_week_ago'])}{', ' + change if change else ''}")
        lines.append(f"- {objective['name']} ({objective['cycle']}): {percent(objective['progress'])} ({before})")
        lines.append(f"  {link(base_url, '/objectives/' + objective['id'])}")
    lines += ["", "New check-ins:" if digest["checkins"] else "No check-ins this week."]
    for checkin in digest["checkins"]:
        author = checkin["author_name"] or "someone"
        lines.append(f"- {checkin['created_at'][:10]} {author} on {checkin['key_result_name']} "
                     f"({checkin['objective_name']}): "
                     f"{shown(checkin['value'], checkin['unit'], checkin['unit_position'])}, "
                     f"confidence {percentages.percent(checkin['confidence'])}")
        if checkin["comment"]:
            lines += ["  " + line for line in checkin["comment"].splitlines()]
    if digest["more_checkins"]:
        lines.append(f"- and more: see the team's objectives on the dashboard {link(base_url, '/')}")
    lines += ["", "Went off track:" if digest["off_track"] else "Nothing went off track."]
    for key_result in digest["off_track"]:
        lines.append(f"- {key_result['name']} ({key_result['objective_name']}): confidence "
                     f"{percentages.percent(key_result['confidence'])}, "
                     f"{link(base_url, '/keyresults/' + key_result['id'])}")
    return lines


def digest_email(entry, base_url):
    """(subject, body) of a person's weekly digest: each of their teams' in turn."""
    names = ", ".join(digest["team"]["name"] for digest in entry["digests"])
    lines = [f"Hello {entry['person']['name']},", "", "Here is your teams' week.", ""]
    for digest in entry["digests"]:
        lines += digest_lines(digest) + ["", ""]
    lines.append(footer(base_url))
    return f"Weekly digest: {names}", "\n".join(lines) + "\n"



def digest_slack_message(digest):
    """A Slack incoming-webhook body for one team's digest: {"text": the fallback, "blocks": [...]}."""
    title = f"{digest['team']['name']}: the week to {digest['week_ending']}"
    objective_lines = []
    for objective in digest["objectives"]:
        change = change_figure(objective["progress"], objective["progress_week_ago"])
        name = objective["name"]
        if digest["base_url"]:
            name = f"<{digest['base_url']}/objectives/{objective['id']}|{slack_escape(name)}>"
        else:
            name = slack_escape(name)
        objective_lines.append(f"• {name}: {percent(objective['progress'])}{f' ({change})' if change else ''}")
    checkin_lines = [
        f"• {slack_escape(c['author_name'] or 'someone')} on {slack_escape(c['key_result_name'])}: "
        f"{slack_escape(shown(c['value'], c['unit'], c['unit_position']))}"
        + (f" — {slack_escape(c['comment'])}" if c["comment"] else "") for c in digest["checkins"]]
    off_lines = [f"• {slack_escape(k['name'])} ({slack_escape(k['objective_name'])}): "
                 f"confidence {percentages.percent(k['confidence'])}"
                 for k in digest["off_track"]]
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": title[:150]}}]
    for heading, items, empty in (("Objectives", objective_lines, "No objectives in a current cycle."),
                                  ("New check-ins", checkin_lines, "No check-ins this week."),
                                  ("Went off track", off_lines, "Nothing went off track.")):
        text = f"*{heading}*\n" + ("\n".join(items) if items else empty)
        # A section's text holds at most 3,000 characters.
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}})
    summary = (f"{title}: {len(digest['objectives'])} objectives, {len(digest['checkins'])} check-ins, "
               f"{len(digest['off_track'])} went off track")
    return {"text": summary, "blocks": blocks}


def slack_escape(text):
    """Text as Slack shows it literally: &, < and > escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# --- sending --------------------------------------------------------------------------------------------


@dataclass
class Email:
    kind: str  # REMINDER or DIGEST
    person: object  # the user row
    subject: str
    body: str


def plan(db, now, base_url):
    """Every weekly email of now, before any is claimed: reminders first, then digests."""
    planned = []
    for entry in reminders(db, now):
        planned.append(Email(REMINDER, entry["person"], *reminder_email(entry, base_url)))
    for entry in digests(db, now, base_url):
        planned.append(Email(DIGEST, entry["person"], *digest_email(entry, base_url)))
    return planned


def claimed(db, week):
    """{(kind, recipient)} of the weekly emails sent (or being sent) in the week."""
    return weekly_mail.claimed(db, week)


def unsent(config, now, week):
    """The weekly emails of now not yet claimed in the week, in a read transaction of their own."""
    with closing(connect(config["DATABASE"], config["BUSY_TIMEOUT_MS"])) as db:
        db.execute("BEGIN")
        try:
            done = claimed(db, week)
            return [email for email in plan(db, now, smtp.public_base(config))
                    if (email.kind, email.person["id"]) not in done]
        finally:
            db.execute("ROLLBACK")


def claim(db, email, week):
    """Claims an email of the week: True when this process is the one to send it."""
    return weekly_mail.claim(db, email.kind, email.person["id"], week)


def release(db, email, week):
    """Gives up a claim whose email was not sent, so that a later round sends it."""
    db.execute("BEGIN IMMEDIATE")
    try:
        weekly_mail.release(db, email.kind, email.person["id"], week)
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")


@dataclass
class Round:
    sent: list
    skipped: int = 0  # claimed by another process meanwhile
    error: str = None  # the mail server's refusal that ended the round; its email's claim is released

    @property
    def complete(self):
        return self.error is None


def send_round(config, mail_settings, now, week):
    """Claims and sends the unsent weekly emails of the week, one by one. The first failure ends the round
    (its claim released): a server that refuses or hangs is tried again at the next round, not once per person."""
    done = Round(sent=[])
    note_due_checkins(config, now, week)
    emails = unsent(config, now, week)
    if not emails:
        return done
    with closing(connect(config["DATABASE"], config["BUSY_TIMEOUT_MS"])) as db:
        for email in emails:
            if not claim(db, email, week):
                done.skipped += 1
                continue
            message = smtp.message(mail_settings, email.person["name"], email.person["email"], email.subject,
                                   email.body)
            try:
                smtp.send(mail_settings, message)
            except smtp.MailError as error:
                release(db, email, week)
                done.error = str(error)
                logger.warning("weekly %s to user %s not sent, tried again in a minute: %s", email.kind,
                               email.person["id"], error)
                return done
            done.sent.append(email)
    if done.sent:
        logger.info("sent %d weekly emails of %s", len(done.sent), week)
    return done


def current_time():
    return datetime.now(timezone.utc)


def weekly_mail_job(app, stop):
    """Job of the server's background process (okr/server/background.py): about once a minute, writes the inbox's
    check-in-due notes (note_due_checkins) and sends the weekly emails that are due and not yet sent. Once a round of the week has sent them all, it rests until the next
    week; a failed round is tried again a minute later."""
    config = app.config
    mail_settings = smtp.settings_or_none(config)  # None: email is not set up, only the inbox's notes are written
    when = schedule(config)
    finished_week = None
    while not stop.is_set():
        try:
            week = due_week(current_time(), when)
            if week is not None and week != finished_week:
                if mail_settings is None:
                    note_due_checkins(config, current_time(), week)
                    finished_week = week
                elif send_round(config, mail_settings, current_time(), week).complete:
                    finished_week = week
        except Exception:  # a busy or broken database: tried again at the next round
            logger.exception("sending the weekly emails failed")
        stop.wait(CHECK_EVERY_SECONDS)
