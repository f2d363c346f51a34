-- OKR service data model.
--
-- A cycle (delivery cycle) groups objectives. An objective belongs to one
-- cycle, may be owned by a team and assigned to a user, and may align to a
-- parent objective. A key result measures one objective; it repeats its
-- objective's cycle_id so that listing a cycle's key results is one index
-- range, kept in step by the triggers at the end.
--
-- Every table has an INTEGER PRIMARY KEY "seq" (AUTOINCREMENT, so never
-- reused): it is the creation order and the key that page tokens encode.
-- "id" is the public UUID4. Decimals are TEXT in canonical plain notation,
-- never REAL. Timestamps are RFC 3339 UTC strings. Deletes cascade through
-- the foreign keys below, which need PRAGMA foreign_keys=ON on every
-- connection. The statements are idempotent: init_db runs this on every start,
-- after the migrations in okr/db.py have brought an older database's tables to
-- the columns below (PRAGMA user_version is the schema version). "revision"
-- counts a row's updates: the API's ETags include it, so that even two updates
-- in one second give two ETags.

-- Two emails are one user when their email_key is: the email in NFC with the
-- letters A to Z lowercased and nothing else, by okr.rules.email_addresses.email_key (version
-- 10; versions 1 to 9 folded case the full Unicode way). email's own NOCASE
-- constraint is version 0's rule, kept because SQLite cannot drop it without
-- rebuilding the table; for emails stored in NFC, as every interface stores
-- them, it never refuses what email_key allows. email_key is NULL only for a
-- user whose email clashed with another's when an upgrade keyed them (see
-- okr/db.py).
CREATE TABLE IF NOT EXISTS users (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    email      TEXT NOT NULL UNIQUE COLLATE NOCASE,
    is_active  INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    created_at TEXT NOT NULL,
    email_key  TEXT,
    revision   INTEGER NOT NULL DEFAULT 0,
    role       TEXT NOT NULL DEFAULT 'editor' CHECK (role IN ('admin', 'editor', 'viewer')),
    password_hash TEXT,
    weekly_email  INTEGER NOT NULL DEFAULT 1 CHECK (weekly_email IN (0, 1)),  -- version 8: reminders and digest
    -- Version 9: who the person is at the identity provider (okr/accounts/identity_provider.py), remembered at
    -- their first sign-in there: the ID token's iss and sub, which later sign-ins match before the email.
    oidc_issuer   TEXT,
    oidc_subject  TEXT
);

CREATE UNIQUE INDEX IF NOT EXISTS users_by_email_key ON users (email_key);
CREATE UNIQUE INDEX IF NOT EXISTS users_by_oidc_subject ON users (oidc_issuer, oidc_subject)
    WHERE oidc_subject IS NOT NULL;
-- Whether anyone has a password (auth is then on) is one probe of this index.
CREATE INDEX IF NOT EXISTS users_with_password ON users (seq) WHERE password_hash IS NOT NULL;

-- People sign in with a password, hashed with argon2id (okr/accounts/passwords.py): role says what they may
-- do (okr/accounts/access.py), password_hash is NULL until they choose one. An invitation is a one-time link to
-- choose it: kept only as its token's SHA-256, one per user (a new one replaces the old), gone once used.
CREATE TABLE IF NOT EXISTS invitations (
    user_id    TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    expires_at TEXT NOT NULL
);

-- A team groups users (the spec): its members, in the order they joined (seq is the page tokens' key).
CREATE TABLE IF NOT EXISTS team_members (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id   TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    user_id   TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    joined_at TEXT NOT NULL,
    UNIQUE (team_id, user_id)
);
-- The cascade from users, and a user's teams.
CREATE INDEX IF NOT EXISTS team_members_by_user ON team_members (user_id);

CREATE TABLE IF NOT EXISTS teams (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL CHECK (length(name) <= 200),
    created_at TEXT NOT NULL,
    revision   INTEGER NOT NULL DEFAULT 0
);

-- A cycle's dates (version 7) are optional ISO dates ("2026-10-01"): it is current while today is between
-- them (a missing one is an open end), upcoming before and finished after (okr.progress.cycle_state).
CREATE TABLE IF NOT EXISTS cycles (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL CHECK (length(name) <= 200),
    created_at TEXT NOT NULL,
    revision   INTEGER NOT NULL DEFAULT 0,
    starts_on  TEXT CHECK (starts_on IS NULL OR date(starts_on) IS starts_on),
    ends_on    TEXT CHECK (ends_on IS NULL OR date(ends_on) IS ends_on),
    -- version 13: a closed cycle is locked (the triggers at the end); who closed it, when
    closed_at  TEXT,
    closed_by  TEXT REFERENCES users (id) ON DELETE SET NULL
);
-- The SET NULL action when a user goes.
CREATE INDEX IF NOT EXISTS cycles_closed_by ON cycles (closed_by) WHERE closed_by IS NOT NULL;

CREATE TABLE IF NOT EXISTS objectives (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    id                  TEXT NOT NULL UNIQUE,
    name                TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 500),
    description         TEXT CHECK (length(description) <= 10000),
    is_company          INTEGER NOT NULL CHECK (is_company IN (0, 1)),
    is_personal         INTEGER NOT NULL CHECK (is_personal IN (0, 1)),
    cycle_id            TEXT NOT NULL REFERENCES cycles (id) ON DELETE CASCADE,
    team_id             TEXT REFERENCES teams (id) ON DELETE SET NULL,
    assignee_id         TEXT REFERENCES users (id) ON DELETE SET NULL,
    parent_objective_id TEXT REFERENCES objectives (id) ON DELETE SET NULL,
    created_at          TEXT NOT NULL,
    modified_at         TEXT NOT NULL,
    revision            INTEGER NOT NULL DEFAULT 0,
    -- version 13: how it ended (set while its cycle is closed out), and the objective it was carried over from
    outcome             TEXT CHECK (outcome IN ('achieved', 'partly_achieved', 'missed', 'dropped', 'carried_over')),
    score               TEXT,
    reflection          TEXT CHECK (length(reflection) <= 10000),
    carried_from_id     TEXT REFERENCES objectives (id) ON DELETE SET NULL,
    created_by          TEXT REFERENCES users (id) ON DELETE SET NULL,  -- version 16: who made it, when known
    -- version 17: who may see it besides its assignee, its key results' owners, its creator and admins
    -- (okr.store.visibility)
    visibility          TEXT NOT NULL DEFAULT 'everyone' CHECK (visibility IN ('everyone', 'team', 'private')),
    CHECK (NOT (is_company AND is_personal)),
    CHECK (parent_objective_id IS NULL OR parent_objective_id <> id)
);

CREATE INDEX IF NOT EXISTS objectives_by_cycle ON objectives (cycle_id, seq);
-- The SET NULL actions look objectives up by team, assignee and parent. These
-- indexes hold only the rows that have one, so deleting an objective without
-- them touches none of the three (a big cycle deletes 25% faster). The
-- objectives_by_team/_assignee/_parent indexes of earlier versions held every
-- row; they are replaced here.
DROP INDEX IF EXISTS objectives_by_team;
DROP INDEX IF EXISTS objectives_by_assignee;
DROP INDEX IF EXISTS objectives_by_parent;
CREATE INDEX IF NOT EXISTS objectives_with_team ON objectives (team_id) WHERE team_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS objectives_with_assignee ON objectives (assignee_id) WHERE assignee_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS objectives_with_parent ON objectives (parent_objective_id)
    WHERE parent_objective_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS objectives_carried_from ON objectives (carried_from_id) WHERE carried_from_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS objectives_by_creator ON objectives (created_by) WHERE created_by IS NOT NULL;
-- Those not everyone sees, which okr.store.visibility finds for each reader of a report or list.
CREATE INDEX IF NOT EXISTS objectives_restricted ON objectives (cycle_id) WHERE visibility != 'everyone';

CREATE TABLE IF NOT EXISTS key_results (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    objective_id     TEXT NOT NULL REFERENCES objectives (id) ON DELETE CASCADE,
    cycle_id         TEXT NOT NULL,  -- always its objective's: see the triggers below
    name             TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 500),
    type             TEXT NOT NULL
                     CHECK (type IN ('milestone', 'baseline', 'range', 'positive', 'negative')),
    confidence       TEXT NOT NULL,
    current_value    TEXT NOT NULL,
    target_value_min TEXT,
    target_value_max TEXT,
    created_at       TEXT NOT NULL,
    modified_at      TEXT NOT NULL,
    revision         INTEGER NOT NULL DEFAULT 0,
    owner_id         TEXT REFERENCES users (id) ON DELETE SET NULL,  -- version 7: who updates it, if anyone
    -- version 11: what it counts ("$", "%", "ms"), shown before or after its figures; none when null
    unit             TEXT CHECK (unit IS NULL OR length(unit) BETWEEN 1 AND 12),
    unit_position    TEXT CHECK (unit_position IN ('before', 'after') AND unit IS NOT NULL OR unit_position IS NULL),
    score            TEXT,  -- version 13: its final score, given as its cycle is closed out
    -- version 16: how much it counts in its objective's progress (a weighted mean; 0: not at all), and whether
    -- its progress is its measure's (its values against its targets) or the share of its initiatives done
    weight           INTEGER NOT NULL DEFAULT 1 CHECK (weight BETWEEN 0 AND 100),
    progress_from    TEXT NOT NULL DEFAULT 'measure' CHECK (progress_from IN ('measure', 'initiatives')),
    -- the target rules of the spec, by type
    CHECK (CASE type
        WHEN 'positive'  THEN target_value_min IS NOT NULL AND target_value_max IS NULL
        WHEN 'negative'  THEN target_value_min IS NOT NULL AND target_value_max IS NULL
        WHEN 'range'     THEN target_value_min IS NOT NULL AND target_value_max IS NOT NULL
        WHEN 'baseline'  THEN target_value_min IS NULL AND target_value_max IS NULL
        WHEN 'milestone' THEN target_value_min IS '1.00' AND target_value_max IS NULL
    END)
);

CREATE INDEX IF NOT EXISTS key_results_by_objective ON key_results (objective_id, seq);
CREATE INDEX IF NOT EXISTS key_results_by_cycle ON key_results (cycle_id, seq);
-- The SET NULL action when a user goes, and a person's own key results ("Your week").
CREATE INDEX IF NOT EXISTS key_results_with_owner ON key_results (owner_id) WHERE owner_id IS NOT NULL;

-- The history of a key result: its first check-in is its starting value, and
-- every change of its current_value or confidence adds one. A deleted author
-- leaves the check-in, without one. Check-ins point at their key result's seq,
-- not its UUID, and their own id has no unique index (nothing looks a check-in
-- up by id): a cycle's check-ins are then a few ranges of one small index, and
-- deleting a big cycle costs a third of what UUID-keyed indexes made it cost.
CREATE TABLE IF NOT EXISTS checkins (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT NOT NULL,
    key_result_seq INTEGER NOT NULL REFERENCES key_results (seq) ON DELETE CASCADE,
    value          TEXT NOT NULL,
    confidence     TEXT NOT NULL,
    comment        TEXT CHECK (length(comment) <= 10000),
    author_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at     TEXT NOT NULL
);

-- Listing, the cascade, and what reports read of a key result's history: its
-- first value, its last check-in's time and its latest values (the sparklines).
-- The index holds those two columns, so reports never visit the table's rows.
CREATE INDEX IF NOT EXISTS checkins_history ON checkins (key_result_seq, seq, value, created_at);
CREATE INDEX IF NOT EXISTS checkins_with_author ON checkins (author_id) WHERE author_id IS NOT NULL;

-- key_results.cycle_id is its objective's cycle_id, always. (A composite
-- foreign key to objectives (id, cycle_id) would say the same, but needs a
-- second unique index on objectives, which made deleting a big cycle 40%
-- slower.)
CREATE TRIGGER IF NOT EXISTS key_results_follow_their_objective
AFTER UPDATE OF cycle_id ON objectives
WHEN NEW.cycle_id IS NOT OLD.cycle_id
BEGIN
    UPDATE key_results SET cycle_id = NEW.cycle_id WHERE objective_id = NEW.id;
END;

CREATE TRIGGER IF NOT EXISTS key_results_insert_in_their_objectives_cycle
BEFORE INSERT ON key_results
WHEN NEW.cycle_id IS NOT (SELECT cycle_id FROM objectives WHERE id = NEW.objective_id)
BEGIN
    SELECT RAISE(ABORT, 'key_results.cycle_id must be its objective''s cycle_id');
END;

CREATE TRIGGER IF NOT EXISTS key_results_stay_in_their_objectives_cycle
BEFORE UPDATE OF objective_id, cycle_id ON key_results
WHEN NEW.cycle_id IS NOT (SELECT cycle_id FROM objectives WHERE id = NEW.objective_id)
BEGIN
    SELECT RAISE(ABORT, 'key_results.cycle_id must be its objective''s cycle_id');
END;

-- API keys for Simple OKR's S1-HMAC-SHA256 request signing. The secret is
-- kept as issued because the server must compute the same HMAC; the file is
-- therefore created readable by its owner only. Keys are revoked, never
-- deleted: once any key exists, every /v1 request needs a valid signature.
-- A read_only key signs GET, HEAD and OPTIONS only.
CREATE TABLE IF NOT EXISTS api_keys (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    credential TEXT NOT NULL UNIQUE,
    secret     TEXT NOT NULL,
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    read_only  INTEGER NOT NULL DEFAULT 0 CHECK (read_only IN (0, 1)),
    user_id    TEXT REFERENCES users (id) ON DELETE CASCADE
);
-- A key with a user_id acts as that user, with that user's role; one without is a service key.
CREATE INDEX IF NOT EXISTS api_keys_by_user ON api_keys (user_id) WHERE user_id IS NOT NULL;

-- Secrets the server keeps for itself: "session" signs the dashboard's session
-- cookies, made once on first use so that sessions survive restarts.
CREATE TABLE IF NOT EXISTS web_secrets (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- The dashboard's sessions, one row each, so that signing out ends one for good: the cookie carries
-- a random token, kept here only as its SHA-256. A session is a user's (signed in with a password) or an
-- API key's (signed in with its credential and secret). Not restored from a backup, nor exported.
CREATE TABLE IF NOT EXISTS web_sessions (
    token_hash  TEXT PRIMARY KEY,
    user_id     TEXT REFERENCES users (id) ON DELETE CASCADE,
    credential  TEXT REFERENCES api_keys (credential) ON DELETE CASCADE,
    created_at  TEXT NOT NULL,
    ended_at    TEXT,
    CHECK ((user_id IS NULL) <> (credential IS NULL))
);
-- The foreign keys' cascades, and ending all of a user's or a key's sessions, find them here.
CREATE INDEX IF NOT EXISTS web_sessions_by_credential ON web_sessions (credential) WHERE credential IS NOT NULL;
CREATE INDEX IF NOT EXISTS web_sessions_by_user ON web_sessions (user_id) WHERE user_id IS NOT NULL;

-- Failed sign-ins (password, API key or invitation link) of the last 15 minutes, by client address and
-- account (a user's email key, a key's credential, or "invitation"): okr/accounts/throttle.py throttles with
-- them. failed_at is in Unix seconds. Not restored, nor exported.
CREATE TABLE IF NOT EXISTS sign_in_failures (
    seq       INTEGER PRIMARY KEY,
    address   TEXT NOT NULL,
    account   TEXT NOT NULL,
    failed_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sign_in_failures_by_address ON sign_in_failures (address, account, failed_at);
CREATE INDEX IF NOT EXISTS sign_in_failures_by_time ON sign_in_failures (failed_at);

-- Version 8: the activity feed. Every change of a resource writes one event in the transaction of the change
-- (okr/store/events.py): "data" is the resource as the API shows it (after the change; before it for a
-- delete), "changes" {field: [before, after]} for an update, both JSON. "actor" is who made it, as JSON
-- ({"type": "user"|"key"|"system", "id", "name"}); person_id the user behind it (a person's own key too).
-- resource_id names what changed; parent_id what it belongs to (a key result's objective, a check-in's
-- key result, a comment's objective or key result, a membership's team); cycle_id and team_id let the
-- Activity page filter. Events older than the retention period are pruned by the server.
CREATE TABLE IF NOT EXISTS events (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    type          TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    actor         TEXT NOT NULL,
    person_id     TEXT,
    resource_type TEXT NOT NULL,
    resource_id   TEXT NOT NULL,
    parent_id     TEXT,
    cycle_id      TEXT,
    team_id       TEXT,
    data          TEXT NOT NULL,
    changes       TEXT,
    -- version 17: the objective it belongs to (its own, its key result's, its comment's...), hidden with it;
    -- none for an event of no objective, or of one seen by everyone that was deleted since
    objective_id  TEXT
);
CREATE INDEX IF NOT EXISTS events_by_resource ON events (resource_id, seq);
CREATE INDEX IF NOT EXISTS events_by_parent ON events (parent_id, seq) WHERE parent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_cycle ON events (cycle_id, seq) WHERE cycle_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_team ON events (team_id, seq) WHERE team_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_person ON events (person_id, seq) WHERE person_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_time ON events (created_at);
CREATE INDEX IF NOT EXISTS events_by_objective ON events (objective_id) WHERE objective_id IS NOT NULL;
-- An objective everyone saw leaves its events to everyone when it goes (a cycle's deletion included); a hidden
-- one's stay hidden (whoever could see them no longer can be told).
CREATE TRIGGER IF NOT EXISTS events_of_deleted_objective AFTER DELETE ON objectives
WHEN OLD.visibility = 'everyone'
BEGIN
    UPDATE events SET objective_id = NULL WHERE objective_id = OLD.id;
END;

-- Comments on an objective or a key result (exactly one of them); they go when it goes. The author is the
-- person who wrote it (a user's key writes as its user), NULL for a service key, open access, or a user
-- since deleted. The body is plain text, shown escaped.
CREATE TABLE IF NOT EXISTS comments (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    objective_id  TEXT REFERENCES objectives (id) ON DELETE CASCADE,
    key_result_id TEXT REFERENCES key_results (id) ON DELETE CASCADE,
    author_id     TEXT REFERENCES users (id) ON DELETE SET NULL,
    body          TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
    created_at    TEXT NOT NULL,
    modified_at   TEXT NOT NULL,
    revision      INTEGER NOT NULL DEFAULT 0,
    CHECK ((objective_id IS NULL) <> (key_result_id IS NULL))
);
CREATE INDEX IF NOT EXISTS comments_on_objective ON comments (objective_id, seq) WHERE objective_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS comments_on_key_result ON comments (key_result_id, seq) WHERE key_result_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS comments_with_author ON comments (author_id) WHERE author_id IS NOT NULL;

-- Outbound webhooks. The secret (whsec_ + base64) must be kept as issued to sign each delivery, as an API
-- key's is. format "events" receives the events its patterns match (GLOB patterns such as "objective.*");
-- "slack" receives the weekly digest only. A hook is active, or disabled (disabled_reason says why: a 410,
-- retries exhausted, or an admin); a disabled hook's events wait in the outbox.
CREATE TABLE IF NOT EXISTS webhooks (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    url             TEXT NOT NULL,
    secret          TEXT NOT NULL,
    format          TEXT NOT NULL DEFAULT 'events' CHECK (format IN ('events', 'slack')),
    allow_private   INTEGER NOT NULL DEFAULT 0 CHECK (allow_private IN (0, 1)),
    is_active       INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    disabled_reason TEXT,
    created_at      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_patterns (
    hook_seq INTEGER NOT NULL REFERENCES webhooks (seq) ON DELETE CASCADE,
    pattern  TEXT NOT NULL,
    PRIMARY KEY (hook_seq, pattern)
);
-- Each event a hook's patterns match, from the event's transaction until it is delivered (then the row goes).
-- next_attempt_at and attempts drive the retries (Unix seconds); the deliverer takes a hook's rows in seq
-- order, so one hook's events arrive in order. Every write of the API may add rows here, so the table is
-- as cheap to add to as it can be: no AUTOINCREMENT (a seq may come back once every row after it is gone,
-- which keeps the order of the rows there are) and no index by event (pruning asks only for the oldest row).
CREATE TABLE IF NOT EXISTS webhook_outbox (
    seq             INTEGER PRIMARY KEY,
    hook_seq        INTEGER NOT NULL REFERENCES webhooks (seq) ON DELETE CASCADE,
    event_seq       INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS webhook_outbox_by_hook ON webhook_outbox (hook_seq, seq);
-- The last attempts of each hook (okr webhooks deliveries): status is the HTTP status, NULL when none came.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    hook_seq     INTEGER NOT NULL REFERENCES webhooks (seq) ON DELETE CASCADE,
    event_id     TEXT NOT NULL,
    event_type   TEXT NOT NULL,
    attempted_at TEXT NOT NULL,
    status       INTEGER,
    error        TEXT
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_hook ON webhook_deliveries (hook_seq, seq);

-- Email. A password reset is a one-time link, valid for an hour, kept as its token's SHA-256 (one per user).
CREATE TABLE IF NOT EXISTS password_resets (
    user_id    TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    expires_at TEXT NOT NULL
);
-- The weekly emails sent (or being sent): one row per kind ("reminder", "digest"), recipient (a user's id,
-- or a team's for a chat digest) and ISO week ("2026-W48"), claimed before sending so that no two processes
-- send the same one.
CREATE TABLE IF NOT EXISTS weekly_mail (
    kind      TEXT NOT NULL,
    recipient TEXT NOT NULL,
    week      TEXT NOT NULL,
    sent_at   TEXT NOT NULL,
    PRIMARY KEY (kind, recipient, week)
);

-- Board links (version 12): a secret URL that opens one cycle's wallboard and nothing else, for a TV that
-- signs in as nobody. Kept as the token's SHA-256 only, shown once when an admin makes it; revoking deletes it.
CREATE TABLE IF NOT EXISTS board_links (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    cycle_id   TEXT NOT NULL REFERENCES cycles (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    label      TEXT NOT NULL CHECK (length(label) BETWEEN 1 AND 100),
    created_by TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS board_links_by_cycle ON board_links (cycle_id);
CREATE INDEX IF NOT EXISTS board_links_by_maker ON board_links (created_by) WHERE created_by IS NOT NULL;

-- A closed cycle is locked (version 13): nothing in it is made, changed or deleted, and nothing moves in or
-- out, until an admin reopens it. The store refuses first, with the cycle's name (okr.store.locks); these
-- triggers make it so for any writer. They leave out the columns a foreign key's SET NULL changes (a team, a
-- person or a carried-from objective deleted elsewhere), which stay possible.
CREATE TRIGGER IF NOT EXISTS closed_cycles_take_no_objectives
BEFORE INSERT ON objectives
WHEN (SELECT closed_at FROM cycles WHERE id = NEW.cycle_id) IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_keep_their_objectives
BEFORE UPDATE OF name, description, is_company, is_personal, cycle_id, outcome, score, reflection ON objectives
WHEN (SELECT closed_at FROM cycles WHERE id = OLD.cycle_id) IS NOT NULL
  OR (SELECT closed_at FROM cycles WHERE id = NEW.cycle_id) IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_lose_no_objectives
BEFORE DELETE ON objectives
WHEN (SELECT closed_at FROM cycles WHERE id = OLD.cycle_id) IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_take_no_key_results
BEFORE INSERT ON key_results
WHEN (SELECT closed_at FROM cycles WHERE id = NEW.cycle_id) IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_keep_their_key_results
BEFORE UPDATE OF name, type, confidence, current_value, target_value_min, target_value_max, unit, unit_position,
    score, objective_id, cycle_id ON key_results
WHEN (SELECT closed_at FROM cycles WHERE id = OLD.cycle_id) IS NOT NULL
  OR (SELECT closed_at FROM cycles WHERE id = NEW.cycle_id) IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_lose_no_key_results
BEFORE DELETE ON key_results
WHEN (SELECT closed_at FROM cycles WHERE id = OLD.cycle_id) IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_take_no_checkins
BEFORE INSERT ON checkins
WHEN (SELECT c.closed_at FROM key_results k JOIN cycles c ON c.id = k.cycle_id WHERE k.seq = NEW.key_result_seq)
     IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_keep_their_checkins
BEFORE UPDATE OF key_result_seq, value, confidence, comment, created_at ON checkins
WHEN (SELECT c.closed_at FROM key_results k JOIN cycles c ON c.id = k.cycle_id WHERE k.seq = OLD.key_result_seq)
     IS NOT NULL
  OR (SELECT c.closed_at FROM key_results k JOIN cycles c ON c.id = k.cycle_id WHERE k.seq = NEW.key_result_seq)
     IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_lose_no_checkins
BEFORE DELETE ON checkins
WHEN (SELECT c.closed_at FROM key_results k JOIN cycles c ON c.id = k.cycle_id WHERE k.seq = OLD.key_result_seq)
     IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_take_no_comments
BEFORE INSERT ON comments
WHEN (SELECT closed_at FROM cycles WHERE id = coalesce(
         (SELECT cycle_id FROM objectives WHERE id = NEW.objective_id),
         (SELECT cycle_id FROM key_results WHERE id = NEW.key_result_id))) IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_keep_their_comments
BEFORE UPDATE OF body, objective_id, key_result_id ON comments
WHEN (SELECT closed_at FROM cycles WHERE id = coalesce(
         (SELECT cycle_id FROM objectives WHERE id = OLD.objective_id),
         (SELECT cycle_id FROM key_results WHERE id = OLD.key_result_id))) IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_lose_no_comments
BEFORE DELETE ON comments
WHEN (SELECT closed_at FROM cycles WHERE id = coalesce(
         (SELECT cycle_id FROM objectives WHERE id = OLD.objective_id),
         (SELECT cycle_id FROM key_results WHERE id = OLD.key_result_id))) IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

-- Initiatives (version 16): the work that moves a key result, each with an owner, a state, maybe a due date and a
-- link to the ticket elsewhere. A key result whose progress_from is 'initiatives' takes the share of them done.
CREATE TABLE IF NOT EXISTS initiatives (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    key_result_id TEXT NOT NULL REFERENCES key_results (id) ON DELETE CASCADE,
    name          TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 500),
    owner_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    state         TEXT NOT NULL DEFAULT 'planned' CHECK (state IN ('planned', 'in_progress', 'done', 'blocked')),
    due_on        TEXT CHECK (due_on IS NULL OR date(due_on) IS due_on),
    link          TEXT CHECK (link IS NULL OR length(link) BETWEEN 1 AND 2000),
    done_at       TEXT,  -- when it was last made done; null while it is not (the charts replay it)
    created_at    TEXT NOT NULL,
    modified_at   TEXT NOT NULL,
    revision      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS initiatives_of_key_result ON initiatives (key_result_id, seq);
CREATE INDEX IF NOT EXISTS initiatives_with_owner ON initiatives (owner_id) WHERE owner_id IS NOT NULL;

CREATE TRIGGER IF NOT EXISTS closed_cycles_take_no_initiatives
BEFORE INSERT ON initiatives
WHEN (SELECT c.closed_at FROM key_results k JOIN cycles c ON c.id = k.cycle_id WHERE k.id = NEW.key_result_id)
     IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_keep_their_initiatives
BEFORE UPDATE ON initiatives
WHEN (SELECT c.closed_at FROM key_results k JOIN cycles c ON c.id = k.cycle_id WHERE k.id = OLD.key_result_id)
     IS NOT NULL
  OR (SELECT c.closed_at FROM key_results k JOIN cycles c ON c.id = k.cycle_id WHERE k.id = NEW.key_result_id)
     IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

CREATE TRIGGER IF NOT EXISTS closed_cycles_lose_no_initiatives
BEFORE DELETE ON initiatives
WHEN (SELECT c.closed_at FROM key_results k JOIN cycles c ON c.id = k.cycle_id WHERE k.id = OLD.key_result_id)
     IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'cycle is closed');
END;

-- Metric sources (version 14). A connection is an admin's: a kind, an address and a secret, the secret sealed
-- with the server's key (okr.sources.sealing: Fernet, the key outside the database), never in clear. A
-- source is an editor's: one key result read through one connection by a query (and a JSONPath or a cell),
-- run by the background process every every_minutes. state: active, failing (failures in a row since
-- failing_since, the last's reason in last_error; the last good value stays) or stopped (after 20 failures;
-- an editor starts it again). A connection in use is not deleted (the store refuses first).
CREATE TABLE IF NOT EXISTS connections (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT NOT NULL UNIQUE,
    name           TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
    kind           TEXT NOT NULL CHECK (kind IN ('http_json', 'csv', 'postgresql', 'sqlite', 'prometheus')),
    address        TEXT NOT NULL CHECK (length(address) BETWEEN 1 AND 2000),
    headers        TEXT NOT NULL DEFAULT '{}',
    sealed_secret  TEXT,
    inside_network INTEGER NOT NULL DEFAULT 0 CHECK (inside_network IN (0, 1)),
    created_at     TEXT NOT NULL,
    modified_at    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sources (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    key_result_seq  INTEGER NOT NULL UNIQUE REFERENCES key_results (seq) ON DELETE CASCADE,
    connection_seq  INTEGER NOT NULL REFERENCES connections (seq) ON DELETE CASCADE,
    query           TEXT NOT NULL CHECK (length(query) BETWEEN 1 AND 10000),
    path            TEXT CHECK (path IS NULL OR length(path) BETWEEN 1 AND 1000),
    every_minutes   INTEGER NOT NULL DEFAULT 60 CHECK (every_minutes BETWEEN 15 AND 1440),
    state           TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'failing', 'stopped')),
    failures        INTEGER NOT NULL DEFAULT 0,
    failing_since   TEXT,
    last_error      TEXT,
    last_run_at     TEXT,
    next_run_at     TEXT NOT NULL,
    created_by      TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at      TEXT NOT NULL,
    modified_at     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sources_by_connection ON sources (connection_seq);
CREATE INDEX IF NOT EXISTS sources_due ON sources (next_run_at) WHERE state != 'stopped';
CREATE INDEX IF NOT EXISTS sources_by_maker ON sources (created_by) WHERE created_by IS NOT NULL;
-- What a value a source wrote was read from: the request as run (secrets as ***), what replays it exactly
-- (JSON, no secret), the moment asked for, when it was read, the SHA-256 of the whole answer and its first
-- 64 KB. The check-in's author is the source: source_name is its connection's name then. connection_seq lets
-- Recompute run it again (NULL once that connection is gone).
CREATE TABLE IF NOT EXISTS evidence (
    checkin_seq    INTEGER PRIMARY KEY REFERENCES checkins (seq) ON DELETE CASCADE,
    connection_seq INTEGER REFERENCES connections (seq) ON DELETE SET NULL,
    source_name    TEXT NOT NULL,
    request        TEXT NOT NULL,
    replay         TEXT NOT NULL,
    as_of          TEXT,
    read_at        TEXT NOT NULL,
    sha256         TEXT NOT NULL,
    answer         BLOB NOT NULL,
    answer_size    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS evidence_by_connection ON evidence (connection_seq) WHERE connection_seq IS NOT NULL;

-- AI assistants (version 15; okr/assistants, okr/accounts/assistant_grants.py). A grant is one connected assistant:
-- a person's personal token (client_seq NULL), or the tokens an OAuth client (registered by itself, RFC 7591)
-- was given when the person consented. Tokens are kept only as their SHA-256; a grant ends when it expires,
-- when the person is deactivated or their role is no longer the one it was given under (role), or when it is
-- disconnected (the row goes). An authorization code lives ten minutes and is used once. None is exported.
CREATE TABLE IF NOT EXISTS oauth_clients (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    client_id     TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    redirect_uris TEXT NOT NULL,
    metadata      TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS oauth_codes (
    code_hash      TEXT PRIMARY KEY,
    client_seq     INTEGER NOT NULL REFERENCES oauth_clients (seq) ON DELETE CASCADE,
    user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    redirect_uri   TEXT NOT NULL,
    scope          TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    resource       TEXT,
    expires_at     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS oauth_codes_by_client ON oauth_codes (client_seq);
CREATE INDEX IF NOT EXISTS oauth_codes_by_user ON oauth_codes (user_id);
CREATE TABLE IF NOT EXISTS assistant_grants (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    id                 TEXT NOT NULL UNIQUE,
    user_id            TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_seq         INTEGER REFERENCES oauth_clients (seq) ON DELETE CASCADE,
    name               TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    read_only          INTEGER NOT NULL CHECK (read_only IN (0, 1)),
    role               TEXT NOT NULL,
    token_hash         TEXT NOT NULL UNIQUE,
    expires_at         TEXT NOT NULL,
    refresh_hash       TEXT UNIQUE,
    refresh_expires_at TEXT,
    created_at         TEXT NOT NULL,
    last_used_at       TEXT,
    -- version 16: the refresh token this one replaced; presented again (a stolen copy), it ends the grant
    previous_refresh_hash TEXT
);
CREATE INDEX IF NOT EXISTS assistant_grants_by_previous_refresh ON assistant_grants (previous_refresh_hash)
    WHERE previous_refresh_hash IS NOT NULL;
CREATE INDEX IF NOT EXISTS assistant_grants_by_user ON assistant_grants (user_id, seq);
CREATE INDEX IF NOT EXISTS assistant_grants_by_client ON assistant_grants (client_seq) WHERE client_seq IS NOT NULL;

-- The inbox (issue 39; okr/store/notifications.py): what a person is told of, written in the transaction of the
-- change that causes it, never for their own action. Only ids are kept: the objective's name or the comment's
-- text is read when the inbox is (a renamed or newly hidden objective shows as it is then); a notification goes
-- with its person, objective, key result or comment (a deleted comment's mention leaves the inbox). mail: 'due'
-- when the person takes this kind by email (notification_email) and it is not sent yet, 'sent', or NULL.
CREATE TABLE IF NOT EXISTS notifications (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    person_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('mentioned', 'commented', 'changed', 'source_failed', 'checkin_due')),
    actor_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    objective_id  TEXT REFERENCES objectives (id) ON DELETE CASCADE,
    key_result_id TEXT REFERENCES key_results (id) ON DELETE CASCADE,
    comment_id    TEXT REFERENCES comments (id) ON DELETE CASCADE,
    created_at    TEXT NOT NULL,
    read_at       TEXT,
    mail          TEXT CHECK (mail IN ('due', 'sent'))
);
CREATE INDEX IF NOT EXISTS notifications_by_person ON notifications (person_id, read_at, seq);
CREATE INDEX IF NOT EXISTS notifications_by_actor ON notifications (actor_id) WHERE actor_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS notifications_on_objective ON notifications (objective_id) WHERE objective_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS notifications_on_key_result ON notifications (key_result_id) WHERE key_result_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS notifications_on_comment ON notifications (comment_id) WHERE comment_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS notifications_to_mail ON notifications (seq) WHERE mail = 'due';
-- Which kinds of notification a person also takes by email: a row overrides the default (mentions on, the rest
-- off).
CREATE TABLE IF NOT EXISTS notification_email (
    person_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind      TEXT NOT NULL CHECK (kind IN ('mentioned', 'commented', 'changed', 'source_failed', 'checkin_due')),
    is_on     INTEGER NOT NULL CHECK (is_on IN (0, 1)),
    PRIMARY KEY (person_id, kind)
);
