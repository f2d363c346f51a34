"""Moving data in and out: the okr-export JSON format (okr export, okr import) and a cycle's key results as CSV.

The core of the two commands (okr/cli/transfer.py is their command line), one
module per job: export (JSON and CSV out), reader (a file read as it streams
by), rows (the rules a row must meet, for every importer), importer (okr
import), api_client (a client of this API, which is Simple OKR's) and
from_simpleokr (okr import-simpleokr, which reads a Simple OKR API through
api_client). It works on an open SQLite connection and on files, never on Flask's
app or request: rows are checked with the API's own marshmallow schemas
(okr.rules.body_schemas), written by okr.store.bulk, and CSV figures come from the
report's query and okr.progress, so that a rule lives in one place.

The okr-export format, version 5
--------------------------------

One JSON object in UTF-8. okr export writes it like this, one record to a line,
and okr import reads it as it streams by, whatever its layout:

    {"format": "okr-export", "version": 5,
    "events": [
    {"id": "9b1f…", "type": "objective.updated", "created_at": "2026-11-22T10:15:30Z",
     "actor": {"type": "user", "id": "5c0e…", "name": "Ada Lovelace"}, "person_id": "5c0e…", …},
    …
    ],
    "users": [
    {"id": "5c0e…", "name": "Ada Lovelace", "email": "ada@example.com", "role": "admin", "is_active": true,
     "created_at": "2026-11-22T10:15:30Z", "revision": 0, "weekly_email": true, "oidc_issuer": null,
     "oidc_subject": null},
    …
    ],
    "teams": [ … ],
    "team_members": [ … ],
    "cycles": [ … ],
    "objectives": [ … ],
    "key_results": [ … ],
    "checkins": [ … ],
    "comments": [ … ],
    "initiatives": [ … ],
    "api_keys": [ … ]
    }

"format" and "version" come first; then the sections, in this order, each an
array of records in creation order (the database's seq; a team member's is
when the user joined). "api_keys" is there only when exported with
--include-keys; the other ten are always there, empty or not. Every record
has exactly these fields, in this order; a field the database holds as NULL is
null:

    events       id, type, created_at, actor, person_id, resource_type, resource_id, parent_id,
                 cycle_id, team_id, data, changes
    users        id, name, email, role, is_active, created_at, revision, weekly_email, oidc_issuer,
                 oidc_subject
    teams        id, name, created_at, revision
    team_members team_id, user_id, joined_at
    cycles       id, name, created_at, revision, starts_on, ends_on, closed_at, closed_by
    objectives   id, name, description, is_company, is_personal, cycle_id, team_id,
                 assignee_id, parent_objective_id, created_at, modified_at, revision,
                 outcome, score, reflection, carried_from_id, created_by
    key_results  id, objective_id, name, type, confidence, current_value,
                 target_value_min, target_value_max, created_at, modified_at, revision,
                 owner_id, unit, unit_position, score, weight, progress_from
    checkins     id, key_result_id, value, confidence, comment, author_id, created_at
    comments     id, objective_id, key_result_id, author_id, body, created_at, modified_at, revision
    initiatives  id, key_result_id, name, owner_id, state, due_on, link, done_at, created_at, modified_at,
                 revision
    api_keys     credential, secret, name, read_only, created_at, revoked_at, user_id

Values are as the API shows them: ids are lowercase UUIDs, timestamps RFC 3339
UTC to the second ("2026-11-22T10:15:30Z"), decimals the stored strings
("0.50", "-5.00"), is_* and read_only true or false, revision the row's update
counter (part of its ETag), a cycle's starts_on and ends_on ISO dates
("2026-10-01") or null, a key result's owner_id a user's id or null, its unit text
of up to 12 characters or null and unit_position "before", "after" or null. A cycle's
closed_at and closed_by are when it was closed and by whom (a user's id; null once
deleted), both null while open; an objective's outcome, score, reflection and a key
result's score are its close-out (okr.rules.body_schemas' rules, as PATCH takes them),
null until given; an objective's carried_from_id the objective it was copied from
(okr.store.cycles.copy), or null. A key result's cycle is its objective's, so it is
not written; a check-in names its key result by id. A user's role is admin,
editor or viewer; weekly_email whether the weekly reminders and digest go to
them (the account page's switch); oidc_issuer and oidc_subject who they are at
the identity provider (okr.accounts.identity_provider), both null until their first sign-in there.
A comment is on an objective (objective_id) or a key result (key_result_id),
the other null; its author_id is null for a service key's, open access's or a
deleted user's. A key result's weight is how much it counts in its objective's
progress (0 to 100), its progress_from "measure" or "initiatives"; an initiative
is the work under a key result: its owner_id a user's id or null, its state
planned, in_progress, done or blocked, its due_on an ISO date or null, its
link an http(s) address or null, and its done_at when it was last made done (null
while it is not). An objective's created_by is the user who made it, null when
unknown (made by a service key or a command, or before version 6). An API key's user_id is the user it acts for, null for a
service key. An API key's secret is the secret itself, as the database keeps
it (the server needs it to check signatures): a file exported with
--include-keys grants access to the API.

"events" is the activity feed: every event the database still holds (the
server prunes those older than its retention period, okr export keeps what is
left of them for good), oldest first. Each is as okr.store.events recorded it:
type "<resource>.<action>" (objective.updated, team.member_added), actor who
made it as a JSON object ({"type": "user", "id", "name"} and, signed in with a
key, "key": {"id", "name"}; {"type": "key", …} for a service key; {"type":
"system", "id": null, "name": "okr import"} for a command), person_id the user
behind it or null, resource_type and resource_id what changed, parent_id,
cycle_id and team_id where it belongs or null, data the resource as the API
showed it (a JSON object), changes null or {field: [before, after]}. Its ids
are not references: they name rows that may since have been deleted. An API
key's events name it by its credential (never its secret), with or without
--include-keys, as the feed does.

The events come first, before the data they are the history of. An import
adds them as they are, in file order, and writes the rows without events of
their own: the file's events already say how each row came to be, and a second
"created" per row would say it twice (and grow the file at every round trip).
An event is never edited: one already stored, by id, is left as it is
("unchanged"). Importing an event puts it in no webhook's outbox: it is
history, not a change made now. Once everything is written the import records
one event of its own, last: type data.imported, by the system actor "okr
import", resource_type "data", resource_id the file's SHA-256, data {"file":
its name (not its path), "sha256", "merge": true or false, "counts": {section:
{"added", "updated", "unchanged"}}, with "api_keys": {"left_out": n} without
--include-keys}. That one goes to the webhooks as any change's does. So the
feed (in the database's seq order) shows the file's history, then the import
(with --merge, the events the database already holds come before both), and
exporting again after an import into an empty database gives the same file
but for that one event, last in "events". An imported event older than the
server's retention period is pruned at the server's next start, as any other.

Not in the file, ever (rows.LEFT_OUT, which okr import's report names):
users' password hashes, invitations, password resets, the dashboard's
sessions and its session signing key, the record of failed sign-ins,
webhooks (with their secrets, patterns, outbox and deliveries), the record
of weekly emails sent, and metric sources (connections with their sealed
secrets, key results' sources, and the evidence of the values they wrote:
those values come along as check-ins). A user an import adds has no password until one is
set; a user already in the database keeps theirs (an import writes only the
fields above).

Version 1, the release before team members', is read too: it has no "events",
"team_members" or "comments" section, no "role", "weekly_email", "oidc_issuer"
or "oidc_subject" in its users and no "user_id" in its API keys. Version 2 has
no "comments" and no users' "weekly_email", "oidc_issuer" or "oidc_subject";
one written before events were exported has no "events" section either; all
import, with no history and no comments. A user without a role is a new
editor, or a stored user whose role stays as it is; one without weekly_email
is a new user who gets them, or a stored user whose choice stays; one without
oidc_issuer and oidc_subject a new user with no link, or a stored user whose
link stays. An API key without a user_id is a new service key, or a stored key
whose user stays. A version 3 file may leave those fields out the same way. Version 4
has no closing fields: a new cycle is open and a new objective or key result has no
close-out and no carried-from link; a stored one keeps its own. Version 5 has no
"initiatives" section, no key results' weight or progress_from and no objectives'
created_by: a new key result weighs 1 and takes its progress from its measure, a new
objective's creator is unknown; a stored one keeps its own.

A closed cycle: the file's cycles are written without their closing, and once every
section is written each is closed as the file says (okr.store.bulk.close_cycle), so that
schema.sql's triggers, which refuse any write inside a closed cycle, let the file's own
rows in. A cycle closed in the database refuses a merge that would change anything inside
it: a record in it (or moved in or out) that differs from what is stored, a new one, or
its own row or closing changed; the refusal names the record and the cycle
(rows.closed_refusal). A record identical to the stored one is left alone, unwritten.

okr import checks the whole file before it writes anything, and then writes it
in one transaction: a problem anywhere leaves the database as it was. It
refuses a file of another format, of a newer version, invalid or truncated
JSON, a record with a missing or unknown field, a value the API would refuse
(through the API's own schemas: names, types and targets, decimals, confidence
from 0 to 1, the company/personal rule, text lengths, a comment's body), a
comment on both an objective and a key result or on neither, an identity-
provider link with an issuer and no subject or the other way round, a time
that is not one,
an id that is not a lowercase UUID or appears twice in its section (check-ins
aside: the database keeps their ids without a unique index too), an event
that is not one (a type not "resource.action", an actor of another type or
with other fields, data not an object, changes neither null nor an object of
[before, after] pairs, its other ids not text of up to rows.MAX_EVENT_ID characters
or null), a role that
is not admin, editor or viewer, a team member listed twice, two users whose
emails are one under the email rule (okr.rules.email_addresses), two users with one identity-
provider link (in the file, or with --merge one in the file and another in
the database), a reference to a row that is neither in the file nor (with
--merge) in the database (a team member's team and user, a comment's
objective, key result and author, an API key's user among them), an
alignment loop, and a merge that would leave a database that has an active
admin without one.
The refusal names the first problem and its place, counted from 0:
"objectives[3]: cycle_id … does not exist: no cycle in the file has that id".
A value the API would take in another spelling (0.5, "0.500", a decomposed
accent in an email) is stored as the API stores it. Any layout of the JSON
will do, so long as "format" and "version" come first and the sections follow
in the order above. Into an empty
database (no users, teams, cycles, objectives, key results, check-ins or
comments; API keys and events do not count: okr init-db and okr keys create
make them) rows keep their ids, timestamps and revisions and are stored in
file order, so that exporting again gives the same bytes but for the import's
own event. With --merge, rows are matched by id (comments too; API keys by
credential): a new one is added after the existing ones, a changed one is
updated (its created_at kept, its revision moved past both), an identical one
left alone; a check-in already recorded on its key result is left alone
(check-ins are never edited), a team member already in its team stays as it is
(its joined_at kept), and a revoked key stays revoked. A user's weekly_email
is taken from the file without moving their revision (it is a private
setting no API field shows); their identity-provider link is taken only when
the database's user has none: a stored link, which signs its person in, is
never replaced or removed by a file. A comment
deleted from the database comes back when the file has it. Nothing is
deleted.

The CSV of a cycle
------------------

okr export --format csv --cycle ID writes one row per key result of the cycle,
objective by objective in creation order, each objective's key results in
theirs, with the columns of CSV_COLUMNS below. It is UTF-8 with a byte-order
mark (without one, Excel reads it in the local code page) and CRLF line ends.
start_value, progress, status, stale and last_checkin_at are the cycle
report's own (okr.reports.alignment, okr.progress); a baseline's progress is empty.
Names and units are free text, which a spreadsheet would run as a formula when it begins
with = + - @, a tab or a carriage return: such a text gets a leading single
quote (OWASP's advice on CSV injection). Every other column holds an id, a
fixed word, a time or a decimal the service wrote, so none is quoted:
"-5.00" stays the number minus five.
"""
from .export import CSV_ENCODING, cycle_csv_bytes, export_csv, export_json, spreadsheet_text
from .importer import import_file
from .rows import DERIVED_COLUMNS, FIELDS, FORMAT, LEFT_OUT, PLURAL, SINGULAR, VERSION, Refusal, checked_record

__all__ = ["CSV_ENCODING", "DERIVED_COLUMNS", "FIELDS", "FORMAT", "LEFT_OUT", "PLURAL", "SINGULAR", "VERSION",
           "Refusal", "checked_record", "cycle_csv_bytes", "export_csv", "export_json", "import_file",
           "spreadsheet_text"]
