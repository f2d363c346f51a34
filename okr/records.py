"""How each resource looks in JSON, built straight from its database row.

The API, the reports and whatever else shows a resource call these, so that a
resource has one shape everywhere. Field order is the spec's.
"""
from .progress import cycle_state


def objective_json(row):
    return {
        "id": row["id"],
        "name": row["name"],
        "created_at": row["created_at"],
        "modified_at": row["modified_at"],
        "team_id": row["team_id"],
        "assignee_id": row["assignee_id"],
        "description": row["description"],
        "is_personal": bool(row["is_personal"]),
        "is_company": bool(row["is_company"]),
        "parent_objective_id": row["parent_objective_id"],
        "cycle_id": row["cycle_id"],
    }


def objective_details_json(row):
    """An objective with what the spec does not have (PATCH, reports): its close-out and where it was carried
    from."""
    return {**objective_json(row), "outcome": row["outcome"], "score": row["score"], "reflection": row["reflection"],
            "carried_from_id": row["carried_from_id"], "visibility": row["visibility"]}


def key_result_json(row):
    return {
        "id": row["id"],
        "name": row["name"],
        "created_at": row["created_at"],
        "modified_at": row["modified_at"],
        "objective_id": row["objective_id"],
        "confidence": row["confidence"],
        "type": row["type"],
        "current_value": row["current_value"],
        "target_value_min": row["target_value_min"],
        "target_value_max": row["target_value_max"],
    }


def cycle_json(row):
    return {"id": row["id"], "name": row["name"], "created_at": row["created_at"]}


def cycle_dates_json(row):
    """A cycle with its dates, which the spec does not have (its events)."""
    return {**cycle_json(row), "starts_on": row["starts_on"], "ends_on": row["ends_on"]}


def cycle_details_json(row, today):
    """A cycle with what the spec does not have (reports, PATCH): its dates, its state on the date today, and
    when it was closed and by whom (null while open)."""
    return {**cycle_dates_json(row), "state": cycle_state(row["starts_on"], row["ends_on"], today),
            "closed_at": row["closed_at"], "closed_by": row["closed_by"]}


def key_result_details_json(row):
    """A key result with what the spec does not have (reports, PATCH): its owner, its unit and where that goes, its
    close-out score, its weight and where its progress comes from."""
    return {**key_result_json(row), "owner_id": row["owner_id"], "unit": row["unit"],
            "unit_position": row["unit_position"], "score": row["score"], "weight": row["weight"],
            "progress_from": row["progress_from"]}


def initiative_json(row):
    """An initiative: the work that moves a key result (/v1/initiatives, its events, the reports)."""
    return {"id": row["id"], "key_result_id": row["key_result_id"], "name": row["name"], "owner_id": row["owner_id"],
            "state": row["state"], "due_on": row["due_on"], "link": row["link"], "created_at": row["created_at"],
            "modified_at": row["modified_at"]}


team_json = cycle_json  # a team has a cycle's three fields


def user_json(row):
    return {
        "id": row["id"],
        "name": row["name"],
        "email": row["email"],
        "is_active": bool(row["is_active"]),
        "created_at": row["created_at"],
    }


def user_role_json(row):
    """A user with the role, which the spec does not have (its events, /v1/me)."""
    return {**user_json(row), "role": row["role"]}


def membership_json(team_id, user):
    """A user's membership of a team (its events)."""
    return {"team_id": team_id, "user_id": user["id"], "user_name": user["name"]}


def key_json(row):
    """An API key as its events show it: never its secret."""
    return {"id": row["credential"], "name": row["name"], "read_only": bool(row["read_only"]),
            "user_id": row["user_id"], "created_at": row["created_at"], "revoked_at": row["revoked_at"]}


def assistant_json(row):
    """A connected assistant (an assistant_grants row) as its event shows it: never a token, nor a token's hash.
    kind: personal_token (made on the account page) or oauth (signed in by itself); expires_at: when it ends at
    the latest (an OAuth grant's, when its refresh token expires)."""
    return {"id": row["id"], "name": row["name"], "user_id": row["user_id"],
            "kind": "personal_token" if row["client_seq"] is None else "oauth", "read_only": bool(row["read_only"]),
            "expires_at": row["refresh_expires_at"] or row["expires_at"], "created_at": row["created_at"]}


def checkin_json(row):
    return {
        "id": row["id"],
        "key_result_id": row["key_result_id"],
        "value": row["value"],
        "confidence": row["confidence"],
        "comment": row["comment"],
        "author_id": row["author_id"],
        "created_at": row["created_at"],
    }


def comment_json(row):
    """A comment on an objective or a key result (one of objective_id, key_result_id is null); its body is
    plain text."""
    return {
        "id": row["id"],
        "body": row["body"],
        "objective_id": row["objective_id"],
        "key_result_id": row["key_result_id"],
        "author_id": row["author_id"],
        "created_at": row["created_at"],
        "modified_at": row["modified_at"],
    }


def notification_json(row):
    """A notification in a person's inbox (okr.store.notifications.page's row): the names and the comment's text
    as they are now."""
    return {
        "id": row["id"],
        "kind": row["kind"],
        "created_at": row["created_at"],
        "read_at": row["read_at"],
        "actor_id": row["actor_id"],
        "actor_name": row["actor_name"],
        "objective_id": row["concerns_id"],
        "objective_name": row["objective_name"],
        "key_result_id": row["key_result_id"],
        "key_result_name": row["key_result_name"],
        "comment_id": row["comment_id"],
        "comment_body": row["comment_body"],
    }


def connection_json(row, needs_secret=False):
    """A connection of metric sources as the API shows it to admins: never its secret, only whether it has one
    and whether it needs it again (a database restored where its key is not)."""
    return {
        "id": row["id"],
        "name": row["name"],
        "kind": row["kind"],
        "address": row["address"],
        "headers": row["headers"],
        "has_secret": row["sealed_secret"] is not None,
        "needs_secret": needs_secret,
        "inside_network": row["inside_network"],
        "sources": row.get("sources"),
        "created_at": row["created_at"],
        "modified_at": row["modified_at"],
    }


def source_json(row, takes_as_of):
    """A key result's source as the API shows it to editors: its query, path, schedule and state."""
    return {
        "id": row["id"],
        "key_result_id": row["key_result_id"],
        "connection_id": row["connection_id"],
        "connection_name": row["connection_name"],
        "kind": row["kind"],
        "query": row["query"],
        "path": row["path"],
        "every_minutes": row["every_minutes"],
        "takes_as_of": takes_as_of,
        "state": row["state"],
        "failures": row["failures"],
        "failing_since": row["failing_since"],
        "last_error": row["last_error"],
        "last_run_at": row["last_run_at"],
        "next_run_at": row["next_run_at"],
        "created_at": row["created_at"],
        "modified_at": row["modified_at"],
    }


def evidence_json(row):
    """What a source-written check-in's value was read from (the answer's bytes are their own endpoint)."""
    return {
        "checkin_id": row["checkin_id"],
        "key_result_id": row["key_result_id"],
        "value": row["value"],
        "source_name": row["source_name"],
        "request": row["request"],
        "as_of": row["as_of"],
        "read_at": row["read_at"],
        "sha256": row["sha256"],
        "answer_size": row["answer_size"],
        "answer_kept": len(row["answer"]),
    }
