"""The activity feed read back for people: the feed (newest first, by team, person and cycle), one objective's
or key result's history, and each event as a sentence ("Ada Lovelace renamed objective “A” → “B”").

Flask-free: the pages (okr.web.activity_pages) turn the sentences' references into links. The events are
written by okr.store.events, in the transaction of each change, and read by okr.store.activity.

Two events of a pair are folded into the other, so that one change reads as one line:
- a check-in's key_result.updated (value and confidence moved, which the check-in says), unless the update
  changed more than those (an edit of the name and the value): then it stays, without value and confidence;
- the first check-in a new key result is given (its start), which the key_result.created says.
Both pairs are written one after the other in one transaction, so their seqs are consecutive.
"""
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from ..rules.ids import MAX_ROW_ID
from ..rules.quantities import shown
from ..store import activity as stored_activity
from ..store import visibility
from ..store.events import event_json

PER_PAGE = 50
HISTORY_SHOWN = 20
# ?history=all on a page: at most this many (the oldest of a much-checked key result's are in the feed).
HISTORY_MOST = 500

# What a check-in moves, and the clock of every update: what a check-in's key_result.updated may change
# (okr.store.activity folds such an update into its check-in).
CHECKIN_FIELDS = frozenset({"current_value", "confidence", "modified_at"})
FILTERS = stored_activity.FILTERS


def entry(row):
    """An event as the pages use it: event_json's, with where it sits (seq, parent, team, cycle) and whether a
    check-in follows it."""
    return {**event_json(row), "seq": row["seq"], "parent_id": row["parent_id"], "team_id": row["team_id"],
            "cycle_id": row["cycle_id"], "with_checkin": bool(row["with_checkin"])}


def feed(db, team_id=None, person_id=None, cycle_id=None, before=None, limit=PER_PAGE):
    """(entries, older): the newest events (before: under this seq) of the team, the person (who made them:
    their sessions and their keys) and the cycle given, newest first; older is the next page's before, or
    None on the last page."""
    rows = stored_activity.newest(db, min(before, MAX_ROW_ID) if before is not None else MAX_ROW_ID, limit + 1,
                                  team_id, person_id, cycle_id)
    older = rows[limit - 1]["seq"] if len(rows) > limit else None
    return entries_seen(db, rows[:limit]), older


def entries_seen(db, rows):
    """The rows' entries as the viewer may see them (okr.store.visibility.shown_event: a parent or carried-from
    objective they may not see is none; an update that changed only that is left out)."""
    seen, entries = {}, []
    for row in rows:
        found = visibility.shown_event(db, entry(row), seen)
        if found is not None:
            entries.append(found)
    return entries


def history(db, kind, resource_id, limit=HISTORY_SHOWN):
    """(entries, more): the latest changes of one objective or key result, newest first, and whether there are
    more. An objective's: its own events, its comments', and the creation and deletion of its key results; a
    key result's: its own, and those of what belongs to it (its check-ins, its comments)."""
    rows = stored_activity.history(db, kind, resource_id, limit + 1)
    return entries_seen(db, rows[:limit]), len(rows) > limit


# --- the names an event refers to -------------------------------------------------------------------------

TABLES = stored_activity.TABLES  # the kinds of row an event's sentence may name


class Names:
    """The names of what events refer to: the present one of what still exists, else the last an event
    recorded; and which of them still exist (to link to)."""

    def __init__(self, live, gone, units=None):
        self.live, self.gone, self.units = live, gone, units or {}

    def name(self, kind, resource_id):
        key = (kind, resource_id)
        return self.live.get(key) or self.gone.get(key) or ""

    def exists(self, kind, resource_id):
        return (kind, resource_id) in self.live

    def unit(self, key_result_id):
        """A key result's (unit, position) for its figures; (None, None) once it is gone."""
        return self.units.get(key_result_id, (None, None))


def names(db, entries):
    """The Names of everything entries refer to, in a query per table and one for what has gone."""
    wanted = {}
    for event in entries:
        for kind, resource_id in references(event):
            if resource_id:
                wanted.setdefault(kind, set()).add(resource_id)
    live = {}
    for kind, ids in wanted.items():
        for row in stored_activity.present_names(db, kind, sorted(ids)):
            live[(kind, row["id"])] = row["name"]
    missing = sorted({i for kind, ids in wanted.items() for i in ids if (kind, i) not in live})
    gone = {}
    if missing:
        gone = {(row["resource_type"], row["resource_id"]): row["name"]
                for row in stored_activity.recorded_names(db, missing)}
    units = {row["id"]: (row["unit"], row["unit_position"])
             for row in stored_activity.key_result_units(db, sorted(wanted.get("key_result", ())))}
    return Names(live, gone, units)


REFERENCE_FIELDS = {"team_id": "team", "assignee_id": "user", "owner_id": "user", "cycle_id": "cycle",
                    "parent_objective_id": "objective", "objective_id": "objective", "user_id": "user"}


def references(event):
    """(kind, id) of everything an event's sentence may name."""
    kind, resource_id = event["resource"]["type"], event["resource"]["id"]
    found = [(kind, resource_id)] if kind in TABLES else []
    if kind == "checkin":
        found.append(("key_result", event["parent_id"]))
    elif kind == "comment":
        found += [("objective", event["parent_id"]), ("key_result", event["parent_id"])]
    elif kind == "initiative":
        found.append(("key_result", event["parent_id"]))
    for field, values in event.get("changes", {}).items():
        if field in REFERENCE_FIELDS:
            found += [(REFERENCE_FIELDS[field], value) for value in values if value]
    for field in ("objective_id", "user_id"):
        if event["data"].get(field):
            found.append((REFERENCE_FIELDS[field], event["data"][field]))
    return found


# --- sentences ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ref:
    """A part of a sentence naming a resource (a link on the pages while it exists)."""
    kind: str
    id: str
    text: str

    def __str__(self):
        return self.text


def figure(text, unit=None, position=None):
    """A stored decimal as people read it on the pages: "60000.00" is "60,000", with the key result's unit
    "$60,000" (okr.rules.quantities.shown)."""
    if text is None:
        return "none"
    try:
        number = Decimal(text)
    except (InvalidOperation, TypeError, ValueError):
        return str(text)
    if not number.is_finite():
        return str(text)
    return shown(format(number, "f"), unit, position)


def percent(text):
    """ "0.80" as "80%"."""
    try:
        return f"{figure(str(Decimal(text) * 100))}%"
    except (InvalidOperation, TypeError, ValueError):
        return "none"


def role_words(role):
    """ "editor" as "an editor"."""
    return {"admin": "an admin", "editor": "an editor", "viewer": "a viewer"}.get(role, str(role))


def quoted(text):
    return f"“{text}”"


def actor_name(actor):
    """Who made a change, as the feed names them: a person (with the key they used), a key, or the system."""
    if actor["type"] == "user":
        name = actor.get("name") or "Someone"
        if actor.get("via"):
            return f"{name} (via {actor['via']})"
        return name + (f" (with the API key “{actor['key']['name']}”)" if actor.get("key") else "")
    if actor["type"] == "key":
        return f"The API key “{actor.get('name') or actor.get('id')}”"
    if actor["type"] == "source":
        return f"The source “{actor.get('name') or actor.get('id')}”"
    return {"okr": "The service", "open access": "Someone (sign-in off)",
            "single sign-on": "A first sign-in with the identity provider"}.get(actor.get("name"),
                                                                            f"The command “{actor.get('name')}”")


KIND_WORDS = {"objective": "objective", "key_result": "key result", "team": "team", "cycle": "cycle",
              "user": "person", "key": "API key", "checkin": "check-in", "comment": "comment", "initiative": "initiative",
              "assistant": "assistant"}
FIELD_WORDS = {"name": "name", "description": "description", "team_id": "team", "assignee_id": "owner",
               "owner_id": "owner", "cycle_id": "cycle", "parent_objective_id": "parent", "type": "type",
               "current_value": "value", "confidence": "confidence", "target_value_min": "target",
               "target_value_max": "highest target", "starts_on": "start", "ends_on": "end", "email": "email",
               "role": "role", "is_active": "active", "is_company": "company", "is_personal": "personal",
               "read_only": "read-only", "revoked_at": "revoked", "body": "text", "unit": "unit",
               "unit_position": "unit's place", "state": "state", "due_on": "due date", "link": "link",
               "weight": "weight", "progress_from": "progress source"}
# Changes said without their values: long text, and an email, which people other than admins need not see.
UNVALUED = {"description", "email", "body"}
NEVER_SAID = {"modified_at", "created_at", "revision"}


def value_parts(field, value, names, unit=(None, None)):
    """One side of a change, as parts; unit: the key result's (unit, position) for its figures."""
    if field in REFERENCE_FIELDS:
        if not value:
            return ["none"]
        kind = REFERENCE_FIELDS[field]
        return [Ref(kind, value, names.name(kind, value) or "(unknown)")]
    if field in ("current_value", "target_value_min", "target_value_max"):
        return [figure(value, *unit)]
    if field == "confidence":
        return [percent(value)]
    if isinstance(value, bool):
        return ["yes" if value else "no"]
    if value is None or value == "":
        return ["none"]
    if field == "name":
        return [quoted(value)]
    return [str(value)]


def change_parts(changes, names, skip=(), unit=(None, None)):
    """ "name “a” → “b”; owner Ada → Bob; description" as parts, or [] when nothing people would see changed;
    unit: the key result's (unit, position) for its figures."""
    parts = []
    for field, (before, after) in changes.items():
        if field in NEVER_SAID or field in skip:
            continue
        if parts:
            parts.append("; ")
        parts.append(FIELD_WORDS.get(field, field.replace("_", " ")))
        if field not in UNVALUED:
            parts += [" ", *value_parts(field, before, names, unit), " → ", *value_parts(field, after, names, unit)]
    return parts


def subject(event, names):
    """The resource an event is about, as a part: its name as the event recorded it."""
    kind, resource_id = event["resource"]["type"], event["resource"]["id"]
    name = event["data"].get("name") or names.name(kind, resource_id) or "(unnamed)"
    return Ref(kind, resource_id, quoted(name)) if kind in TABLES else quoted(name)


def sentence(event, names):
    """What an event says, as parts (strings, and Refs to what it names), beginning with who made it."""
    return [actor_name(event["actor"]), " ", *what(event, names)]


def text(parts):
    """A sentence's parts as plain text."""
    return "".join(str(part) for part in parts)


def what(event, names):
    """The sentence of an event after who made it: "renamed objective “A” → “B”"."""
    kind, resource_id = event["resource"]["type"], event["resource"]["id"]
    action = event["type"].split(".", 1)[1]
    data, words = event["data"], KIND_WORDS.get(kind, kind.replace("_", " "))
    if kind == "checkin":
        key_result = Ref("key_result", event["parent_id"], quoted(names.name("key_result", event["parent_id"])))
        return [f"checked in {figure(data.get('value'), *names.unit(event['parent_id']))} (confidence {percent(data.get('confidence'))}) on key "
                "result ", key_result]
    if kind == "team" and action in ("member_added", "member_removed"):
        person = data.get("user_name") or names.name("user", data.get("user_id")) or "someone"
        team = Ref("team", resource_id, quoted(names.name("team", resource_id) or "(unnamed)"))
        return (["added ", person, " to team ", team] if action == "member_added"
                else ["removed ", person, " from team ", team])
    if kind == "comment":
        on = next((Ref(k, event["parent_id"], f"{KIND_WORDS[k]} {quoted(names.name(k, event['parent_id']))}")
                   for k in ("objective", "key_result") if names.name(k, event["parent_id"])), "an item since deleted")
        verb = {"created": "commented on ", "updated": "edited a comment on ",
                "deleted": "deleted a comment on "}.get(action, f"{action} a comment on ")
        return [verb, on]
    if kind == "initiative":
        key_result = Ref("key_result", event["parent_id"], quoted(names.name("key_result", event["parent_id"])))
        named = quoted(data.get("name") or "(unnamed)")
        if action == "created":
            return ["added initiative ", named, " to key result ", key_result]
        if action == "deleted":
            return ["deleted initiative ", named, " of key result ", key_result]
        return [*updated(event, kind, "initiative", named, names), " of key result ", key_result]
    if kind == "key" and action == "created":
        return ["created the API key ", quoted(data.get("name"))]
    if kind == "assistant" and action == "connected":
        rights = "read only" if data.get("read_only") else "read and write"
        how = "signed in by itself" if data.get("kind") == "oauth" else "with a personal token"
        return ["connected the assistant ", quoted(data.get("name")), f" ({rights}, {how})"]
    if kind == "user" and action == "unlinked":
        return ["unlinked ", data.get("name") or "someone", " from their sign-in with the identity provider"]
    if kind == "user" and action == "sign_in_refused":
        return ["was refused for ", data.get("name") or "someone", ", whose account is linked to another sign-in"]
    if kind == "data" and action == "imported":
        return [imported(data)]
    if kind == "key_result" and action == "source_failed":
        failures = data.get("failures") or 1
        stopped = ", and has stopped" if data.get("state") == "stopped" else ""
        value = shown(data["value"]) if data.get("value") is not None else "its value"
        return [f"failed: {data.get('error') or 'no reason given'} ({failures} failure{'s' if failures != 1 else ''} "
                f"in a row{stopped}); key result ", subject(event, names), f" keeps its value, {value}"]
    it = subject(event, names)
    if action == "created":
        if kind == "key_result":
            objective = data.get("objective_id")
            return ["added key result ", it, " to objective ",
                    Ref("objective", objective, quoted(names.name("objective", objective)))]
        if kind == "user":
            return ["added ", data.get("name") or "someone", f" as {role_words(data.get('role'))}"]
        return [f"created {words} ", it]
    if action == "deleted":
        if kind == "cycle":
            return ["deleted cycle ", it, " and everything in it"]
        return [f"deleted {words} ", it]
    if action == "updated":
        return updated(event, kind, words, it, names)
    return [f"{action.replace('_', ' ')} {words} ", it]


# The sections of an okr-export file as a data.imported event counts them: (one, many).
SECTION_WORDS = {"events": ("event", "events"), "users": ("person", "people"), "teams": ("team", "teams"),
                 "team_members": ("team member", "team members"), "cycles": ("cycle", "cycles"),
                 "objectives": ("objective", "objectives"), "key_results": ("key result", "key results"),
                 "checkins": ("check-in", "check-ins"), "comments": ("comment", "comments"),
                 "api_keys": ("API key", "API keys")}


def imported(data):
    """What an import brought: "imported “all.json”: added 3 people, 2 teams; updated 1 cycle". The event may
    come from a file itself, so anything it lacks is passed over."""
    counts = data.get("counts") if isinstance(data.get("counts"), dict) else {}
    said = []
    for outcome in ("added", "updated"):
        parts = []
        for name, outcomes in counts.items():
            number = outcomes.get(outcome) if isinstance(outcomes, dict) else None
            if type(number) is int and number > 0:
                one, many = SECTION_WORDS.get(name, (name.replace("_", " "),) * 2)
                parts.append(f"{number} {one if number == 1 else many}")
        if parts:
            said.append(f"{outcome} {', '.join(parts)}")
    return (f"{'merged' if data.get('merge') is True else 'imported'} {quoted(str(data.get('file') or 'a file'))}: "
            + ("; ".join(said) or "nothing new"))


def updated(event, kind, words, it, names):
    """The sentence of an update: the one change in its own words where there are some, else each change."""
    changes = {field: values for field, values in event.get("changes", {}).items() if field not in NEVER_SAID}
    if event["with_checkin"]:  # the check-in right after says the value and confidence
        changes = {f: v for f, v in changes.items() if f not in CHECKIN_FIELDS}
    fields = set(changes)
    if kind == "key" and "revoked_at" in fields:
        return ["revoked the API key ", quoted(event["data"].get("name"))]
    if kind == "user":
        person = event["data"].get("name") or "someone"
        if fields == {"is_active"}:
            return ["deactivated " if not changes["is_active"][1] else "reactivated ", person]
        if fields == {"role"}:
            return ["made ", person, f" {role_words(changes['role'][1])}"]
        it = person
    if fields == {"name"}:
        before, after = changes["name"]
        return [f"renamed {words} {quoted(before)} → ", Ref(kind, it.id, quoted(after)) if isinstance(it, Ref)
                else quoted(after)]
    data = event["data"]
    said = change_parts(changes, names, unit=(data.get("unit"), data.get("unit_position")) if kind == "key_result"
                        else (None, None))
    if not said:
        return [f"saved {words} ", it, " unchanged"]
    return [f"changed {words} ", it, ": ", *said]


def note(event):
    """The text people wrote with an event (a check-in's comment, a comment), cut to a few lines, or None."""
    kind = event["resource"]["type"]
    written = event["data"].get("comment") if kind == "checkin" else (
        event["data"].get("body") if kind == "comment" and event["type"] != "comment.deleted" else None)
    if not written:
        return None
    return written if len(written) <= 280 else written[:280].rstrip() + "…"
