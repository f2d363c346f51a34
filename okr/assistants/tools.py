"""The MCP server AI assistants talk to: its tools, resources and prompts, the same over stdio and over HTTP.

Every tool acts for the person its call's grant names (`CALLER`, set by the transport: okr.assistants.web over
HTTP, okr.assistants.stdio for `okr mcp`): it asks the API in this process, or a report (okr.assistants.in_process),
and never computes progress or status itself. A refusal (a bad argument, a write a viewer may not make, something
not found) is a tool error carrying the API's own message, the field named; nothing is written then. Each tool
answers a few lines of text for the model and the same facts as structured content.

Importing this module imports the MCP SDK (about two seconds, 60 MB): the server imports it at the first /mcp
request, not at start.
"""
import contextvars
import functools
import json
import logging
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .. import clock, progress
from ..errors import NotFound
from ..records import checkin_json, comment_json
from ..reports import activity as activity_report
from ..reports import alignment, streaming, your_week
from ..rules import quantities
from ..rules.percentages import percent
from ..store import checkins as stored_checkins
from ..store import comments as stored_comments
from ..store import cycles as stored_cycles
from ..store import objectives as stored_objectives
from .in_process import CallFailed, checked_id

# The calls' Caller (okr.assistants.in_process), set by the transport for each request (HTTP) or session (stdio).
CALLER = contextvars.ContextVar("okr_assistant_caller")
INSTRUCTIONS = (
    "This server holds a team's OKRs: delivery cycles (quarters), objectives, and key results that people check in "
    "on every week. It acts as the person who connected you, with their rights. Start with my_week for what they "
    "owe, or list_cycles then cycle_summary for a quarter. Values are written as people write them: 42, 60k, "
    "$60,000, 80 %.")
CYCLES_LISTED = 50
RECENT = 5

READS = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
EDITS = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)

# The SDK logs at INFO per request ("session manager started"); the server's log keeps its own lines.
logging.getLogger("mcp").setLevel(logging.WARNING)


def quiet_server(**options):
    """An MCPServer that leaves the process's logging as it is (the SDK calls logging.basicConfig otherwise)."""
    root = logging.getLogger()
    placeholder = logging.NullHandler()
    root.addHandler(placeholder)  # basicConfig does nothing to a root logger that has a handler
    try:
        return MCPServer(log_level="WARNING", **options)
    finally:
        root.removeHandler(placeholder)


server = quiet_server(name="okr", title="OKRs", instructions=INSTRUCTIONS)



def new_session_manager():
    """The SDK's Streamable HTTP transport for one exchange: stateless, answering in JSON. Host and Origin are the
    server's own guards' (okr.pipeline), as on every path; the body's limit is the server's too."""
    return StreamableHTTPSessionManager(app=server._lowlevel_server, json_response=True, stateless=True,
                                        security_settings=TransportSecuritySettings(
                                            enable_dns_rebinding_protection=False))


Id = Annotated[str, Field(description="An id this service gave, as the other tools show it.", max_length=64)]


def caller(ctx=None):
    """This call's Caller, named with the assistant the client says it is where its grant has no name (stdio)."""
    current = CALLER.get()
    if current.grant.via is None and ctx is not None:
        params = ctx.request_context.session.client_params
        name = params.client_info.name if params is not None and params.client_info is not None else None
        current = current.named(name or "an MCP client")
    return current


def answer(text, facts):
    """A tool's answer: text for the model, and the facts as structured content."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=facts)


def refusals_as_tool_errors(tool):
    """A CallFailed (the API's refusal) or a value people wrote wrongly becomes a tool error with its message."""
    @functools.wraps(tool)
    async def guarded(*args, **kwargs):
        try:
            return tool(*args, **kwargs)
        except CallFailed as failed:
            raise ToolError(str(failed)) from None
        except quantities.NotANumber as wrong:
            raise ToolError(str(wrong)) from None
    return guarded


def tool(annotations, description):
    def register(fn):
        server.add_tool(refusals_as_tool_errors(fn), name=fn.__name__, description=description,
                        annotations=annotations, structured_output=False)
        return fn
    return register


def now():
    return progress.parse_timestamp(clock.utc_now())


def figure(value, key_result):
    """A key result's stored figure as people read it, with its unit."""
    if value is None:
        return "none"
    return quantities.shown(value, key_result.get("unit"), key_result.get("unit_position"))


def target_words(node):
    if node["type"] == "range":
        return f"{figure(node['target_value_min'], node)} to {figure(node['target_value_max'], node)}"
    if node["type"] == "milestone":
        return "done"
    if node["type"] == "baseline":
        return "a baseline (no target)"
    return figure(node["target_value_min"], node)


def status_words(node):
    """A report node's status, and why where it is behind: its pace and its confidence."""
    status = (node.get("status") or "no status").replace("_", " ")
    reasons = []
    if node.get("expected_progress") is not None and node.get("progress") is not None and \
            node.get("pace_status") in ("behind", "off_pace", "at_risk", "off_track"):
        reasons.append(f"{percent(node['progress'])} done where {percent(node['expected_progress'])} was due by now")
    if node.get("confidence") is not None and node.get("status") in ("at_risk", "off_track"):
        reasons.append(f"confidence {percent(node['confidence'])}")
    if node.get("stale"):
        reasons.append("no check-in for over a week")
    return status + (f" ({'; '.join(reasons)})" if reasons else "")


def key_result_line(node):
    return (f"{node['name']} [id {node['id']}]: {figure(node['current_value'], node)} of {target_words(node)}, "
            f"progress {percent(node['progress']) or 'none'}, {status_words(node)}")


# Reading


@tool(READS, "Who you act for: the person's name, email and role, and whether you may write.")
def whoami(ctx: Context) -> CallToolResult:
    current = caller(ctx)
    me = current.get("/v1/me")
    grant = current.grant
    may_write = not grant.read_only and me["role"] != "viewer"
    user = me["user"] or {}
    text = (f"You act for {user.get('name')} ({user.get('email')}), {me['role']}, via {grant.via}; "
            + ("you may read and write OKRs." if may_write else "you may only read."))
    return answer(text, {"user": user, "role": me["role"], "assistant": grant.via, "may_write": may_write})


@tool(READS, "The key results the person looks after in the current cycles, those waiting for a check-in first.")
def my_week(ctx: Context) -> CallToolResult:
    current = caller(ctx)
    week = current.read(lambda db, grant: your_week.week(db, grant.user_id, now()))
    nodes = week["key_results"] or week["upcoming"]
    lines = []
    for node in nodes:
        flag = "needs a check-in: " if node.get("needs_update") else ""
        lines.append(f"- {flag}{key_result_line(node)}; objective “{node['objective_name']}”, "
                     f"cycle {node['cycle']['name']}")
    if not lines:
        text = "Nothing to look after: the person owns no key result in a current or coming cycle."
    else:
        heading = "Key results this week" if week["key_results"] else "No current cycle; key results to come"
        text = heading + ", most urgent first:\n" + "\n".join(lines)
    facts = {"key_results": [{k: node[k] for k in ("id", "name", "objective_id", "objective_name", "type",
                                                    "current_value", "target_value_min", "target_value_max", "unit",
                                                    "progress", "status", "last_checkin_at")}
                             | {"needs_update": bool(node.get("needs_update")), "cycle": node["cycle"]["name"]}
                             for node in nodes]}
    return answer(text, facts)


def cycles_listed(db, grant):
    moment = now()
    rows = stored_cycles.newest_first(db, 2**63 - 1, CYCLES_LISTED)
    return [streaming.cycle_summary(db, row, moment) for row in rows]


@tool(READS, "The delivery cycles (quarters), newest first, with their dates, state and progress.")
def list_cycles(ctx: Context) -> CallToolResult:
    summaries = caller(ctx).read(cycles_listed)
    lines = [f"- {s['cycle']['name']} [id {s['cycle']['id']}]: {s['cycle']['state']}, "
             f"{s['cycle']['starts_on'] or '?'} to {s['cycle']['ends_on'] or '?'}, progress "
             f"{percent(s['progress']) or 'none'}, {s['objectives_count']} objectives, {s['at_risk']} key results at "
             f"risk or off track" for s in summaries]
    facts = {"cycles": [{**s["cycle"], "progress": s["progress"], "objectives_count": s["objectives_count"],
                         "key_results_count": s["key_results_count"], "at_risk": s["at_risk"]} for s in summaries]}
    return answer("\n".join(lines) or "No cycles yet.", facts)


def flattened(objectives):
    for objective in objectives:
        yield objective
        yield from flattened(objective.get("children", []))


@tool(READS, "A cycle in a few lines: its progress, key results by status, and what is off track or at risk, and "
             "why.")
def cycle_summary(cycle_id: Id, ctx: Context) -> CallToolResult:
    report = caller(ctx).get(f"/v1/cycles/{checked_id(cycle_id, 'cycle_id')}/report")
    cycle = report["cycle"]
    objectives = list(flattened(report["objectives"]))
    key_results = [(objective, kr) for objective in objectives for kr in objective["key_results"]]
    counts = {}
    for _, kr in key_results:
        counts[kr["status"]] = counts.get(kr["status"], 0) + 1
    behind = [(objective, kr) for objective, kr in key_results if kr["status"] in ("off_track", "at_risk")]
    behind.sort(key=lambda pair: pair[1]["status"] != "off_track")
    lines = [f"{cycle['name']}: progress {percent(report.get('progress')) or 'none'}, {len(objectives)} objectives, "
             f"{len(key_results)} key results"
             + (": " + ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in sorted(counts.items())) if counts else "")]
    for objective, kr in behind:
        lines.append(f"- {key_result_line(kr)}; objective “{objective['name']}”")
    facts = {"cycle": cycle, "progress": report.get("progress"), "status_counts": counts,
             "behind": [{"objective_id": o["id"], "objective_name": o["name"], **kr} for o, kr in behind]}
    return answer("\n".join(lines), facts)


@tool(READS, "What to fix in a cycle's OKRs: objectives with too few or too many key results or no owner, key results "
             "without an owner or target or that read as tasks, people who own too many.")
def quality_checks(cycle_id: Id, ctx: Context) -> CallToolResult:
    found = caller(ctx).get(f"/v1/cycles/{checked_id(cycle_id, 'cycle_id')}/checks")
    lines = [f"- {check['severity']}: {check['message']} [{subject_ids(check)}]" for check in found["checks"]]
    heading = (f"{found['count']} thing{'s' if found['count'] != 1 else ''} to fix in this cycle:" if lines
               else "No issues found: every quality check passes in this cycle.")
    return answer("\n".join([heading, *lines]), found)


def subject_ids(check):
    """The ids a check names, as the other tools show them."""
    return ", ".join(f"{name.replace('_id', '').replace('_', ' ')} id {check[name]}"
                     for name in ("key_result_id", "objective_id", "user_id") if check[name] is not None)


def latest_of(column, parent_id, with_checkins):
    """A read of the newest check-ins (with their authors' names) and comments of one objective or key result."""
    def read(db, grant):
        found = {"comments": [{**comment_json(row), "author_name": row["author_name"]}
                              for row in stored_comments.latest(db, column, parent_id, RECENT)]}
        if with_checkins:
            found["checkins"] = [{**checkin_json(row), "author_name": row["author_name"]}
                                 for row in stored_checkins.latest(db, parent_id, RECENT)]
        return found
    return read


def comment_lines(comments):
    return [f"Comment by {c['author_name'] or 'someone'} ({c['created_at'][:10]}): {c['body']}" for c in comments]


@tool(READS, "An objective with its progress, status, key results and latest comments.")
def get_objective(objective_id: Id, ctx: Context) -> CallToolResult:
    current = caller(ctx)
    objective_id = checked_id(objective_id, "objective_id")
    objective = current.get(f"/v1/objectives/{objective_id}/report")["objective"]
    comments = current.read(latest_of("objective_id", objective_id, False))["comments"]
    lines = [f"Objective “{objective['name']}” [id {objective['id']}]: progress "
             f"{percent(objective['progress']) or 'none'}, {(objective['status'] or 'no status').replace('_', ' ')}"]
    if objective.get("description"):
        lines.append(objective["description"])
    lines += [f"- {key_result_line(kr)}" for kr in objective["key_results"]]
    lines += comment_lines(comments)
    return answer("\n".join(lines), {"objective": objective, "comments": comments})


def key_result_node(current, key_result_id, with_history=False):
    """The key result's report node (progress, status, pace: okr.reports.alignment), with its objective's name,
    and with_history its newest check-ins and comments; in one read."""
    def read(db, grant):
        node = alignment.key_result_report(db, key_result_id, now())
        if node is None:
            raise NotFound("key result")
        found = {"key_result": node, "objective_name": stored_objectives.named(db, node["objective_id"])["name"]}
        if with_history:
            found.update(latest_of("key_result_id", key_result_id, True)(db, grant))
        return found
    return current.read(read)


@tool(READS, "A key result with its progress and status, its recent check-ins (newest first) and its latest "
             "comments.")
def get_key_result(key_result_id: Id, ctx: Context) -> CallToolResult:
    current = caller(ctx)
    found = key_result_node(current, checked_id(key_result_id, "key_result_id"), with_history=True)
    node = found["key_result"]
    lines = [key_result_line(node), f"Objective “{found['objective_name']}” [id {node['objective_id']}]"]
    lines += [f"Check-in {c['created_at'][:10]} by {c['author_name'] or 'someone'}: {figure(c['value'], node)}, "
              f"confidence {percent(c['confidence'])}" + (f": {c['comment']}" if c.get("comment") else "")
              for c in found["checkins"]]
    lines += comment_lines(found["comments"])
    return answer("\n".join(lines), found)


@tool(READS, "Finds objectives, key results, teams and people by name, across cycles.")
def search(query: Annotated[str, Field(description="Words of a name.", min_length=1, max_length=200)],
           ctx: Context) -> CallToolResult:
    results = caller(ctx).get("/v1/search", q=query, page_size=25)["results"]
    lines = [f"- {r['type']} “{r['name']}” [id {r['id']}]" for r in results]
    return answer("\n".join(lines) or f"Nothing is named like “{query}”.", {"results": results})


def feed_of(cycle_id, team_id, person_id, limit):
    def read(db, grant):
        entries, _ = activity_report.feed(db, team_id=team_id, person_id=person_id, cycle_id=cycle_id, limit=limit)
        names = activity_report.names(db, entries)
        return [{"at": e["created_at"], "type": e["type"],
                 "text": activity_report.text(activity_report.sentence(e, names)),
                 "note": activity_report.note(e)} for e in entries]
    return read


@tool(READS, "Recent changes, newest first: who checked in, commented, or changed what; filter by cycle, team or "
             "person.")
def activity(ctx: Context, cycle_id: Id | None = None, team_id: Id | None = None, person_id: Id | None = None,
             limit: Annotated[int, Field(ge=1, le=50)] = 20) -> CallToolResult:
    for name, value in (("cycle_id", cycle_id), ("team_id", team_id), ("person_id", person_id)):
        if value is not None:
            checked_id(value, name)
    entries = caller(ctx).read(feed_of(cycle_id, team_id, person_id, limit))
    lines = [f"- {e['at']}: {e['text']}" + (f" — {e['note']}" if e["note"] else "") for e in entries]
    return answer("\n".join(lines) or "No changes yet.", {"events": entries})


# Writing


def as_text(value):
    """A value as text, as a person would have written it: a model may send 42 or 0.8 as JSON numbers."""
    if value is None or isinstance(value, str):
        return value
    return format(value, "f").rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def milestone_value(text):
    words = text.strip().lower()
    if words in ("1", "1.0", "1.00", "done", "yes", "true", "100%", "100 %"):
        return "1"
    if words in ("0", "0.0", "0.00", "not done", "no", "false", "0%", "0 %"):
        return "0"
    raise quantities.NotANumber("A milestone's value is done or not done (1 or 0).")


@tool(WRITES, "Records a check-in on a key result: its new value as people write it (42, 60k, $60,000, 12 %), and "
              "maybe a confidence (0.8 or 80 %) and a comment.")
def check_in(key_result_id: Id,
             value: Annotated[str | int | float, Field(description="The new value: 42, 60k, $60,000, 12 %; done for "
                                                                   "a milestone.")],
             ctx: Context,
             confidence: Annotated[str | int | float | None, Field(description="How sure the target will be met: 0.8 "
                                                                               "or 80 %; left out, it stays.")] = None,
             comment: Annotated[str | None, Field(description="What moved it, in a sentence or two.",
                                                  max_length=10000)] = None) -> CallToolResult:
    current = caller(ctx)
    key_result_id = checked_id(key_result_id, "key_result_id")
    node = key_result_node(current, key_result_id)["key_result"]
    body = {"comment": comment}
    value, confidence = as_text(value), as_text(confidence)
    try:
        body["value"] = (milestone_value(value) if node["type"] == "milestone"
                         else format(quantities.typed(value, node["unit"], node["unit_position"]), "f"))
    except quantities.NotANumber as wrong:
        raise CallFailed(400, "invalid request", {"value": str(wrong)}) from None
    if confidence is not None:
        try:
            typed = quantities.typed_confidence(confidence)
        except quantities.NotANumber as wrong:
            raise CallFailed(400, "invalid request", {"confidence": str(wrong)}) from None
        if typed is not None:
            body["confidence"] = typed
    checkin = current.post(f"/v1/keyresults/{key_result_id}/checkins", body)
    text = (f"Checked in {figure(checkin['value'], node)} on “{node['name']}” (confidence "
            f"{percent(checkin['confidence'])}), as {current.grant.user_name} via {current.grant.via}.")
    return answer(text, {"checkin": checkin})


@tool(WRITES, "Comments on an objective or a key result (give one of the two ids).")
def comment(body: Annotated[str, Field(description="The comment, plain text.", min_length=1, max_length=10000)],
            ctx: Context, objective_id: Id | None = None, key_result_id: Id | None = None) -> CallToolResult:
    if (objective_id is None) == (key_result_id is None):
        raise CallFailed(400, "invalid request", {"objective_id": "Give an objective_id or a key_result_id, not both."})
    path = (f"/v1/objectives/{checked_id(objective_id, 'objective_id')}/comments" if objective_id is not None
            else f"/v1/keyresults/{checked_id(key_result_id, 'key_result_id')}/comments")
    made = caller(ctx).post(path, {"body": body})
    return answer(f"Commented [id {made['id']}].", {"comment": made})


Text = Annotated[str, Field(max_length=10000)]


def some(**fields):
    return {name: value for name, value in fields.items() if value is not None}


@tool(WRITES, "Creates an objective in a cycle; maybe for a team or a person, or under a parent objective.")
def create_objective(name: Annotated[str, Field(min_length=1, max_length=500)], cycle_id: Id, ctx: Context,
                     description: Text | None = None, team_id: Id | None = None, assignee_id: Id | None = None,
                     parent_objective_id: Id | None = None, is_company: bool = False,
                     is_personal: bool = False) -> CallToolResult:
    made = caller(ctx).post("/v1/objectives", {
        "name": name, "cycle_id": cycle_id, "is_company": is_company, "is_personal": is_personal,
        **some(description=description, team_id=team_id, assignee_id=assignee_id,
               parent_objective_id=parent_objective_id)})
    return answer(f"Created objective “{made['name']}” [id {made['id']}].", {"objective": made})


def number(text, field, unit=None, position=None):
    if text is None:
        return None
    text = as_text(text)
    try:
        return format(quantities.typed(text, unit, position), "f")
    except quantities.NotANumber as wrong:
        raise CallFailed(400, "invalid request", {field: str(wrong)}) from None


KeyResultType = Literal["positive", "negative", "range", "milestone", "baseline"]
Figure = Annotated[str | int | float, Field(description="A number as people write it: 100, 60k, 1.5M.")]


@tool(WRITES, "Creates a key result under an objective. type: positive (up to a target), negative (down to one), "
              "range (between two), milestone (done or not) or baseline (measured, no target).")
def create_key_result(objective_id: Id, name: Annotated[str, Field(min_length=1, max_length=500)],
                      type: KeyResultType, ctx: Context, target: Figure | None = None,
                      target_max: Figure | None = None, start: Figure | None = None,
                      owner_id: Id | None = None) -> CallToolResult:
    body = {"name": name, "type": type, **some(target_value_min=number(target, "target"),
                                               target_value_max=number(target_max, "target_max"),
                                               current_value=number(start, "start"), owner_id=owner_id)}
    made = caller(ctx).post(f"/v1/objectives/{checked_id(objective_id, 'objective_id')}/keyresults", body)
    return answer(f"Created key result “{made['name']}” [id {made['id']}].", {"key_result": made})


@tool(EDITS, "Changes an objective: only the fields given change (null clears a team, person, parent or "
             "description).")
def update_objective(objective_id: Id, ctx: Context, name: Annotated[str | None, Field(max_length=500)] = None,
                     description: Text | None = None, team_id: Id | None = None, assignee_id: Id | None = None,
                     parent_objective_id: Id | None = None) -> CallToolResult:
    changes = given(ctx, name=name, description=description, team_id=team_id, assignee_id=assignee_id,
                    parent_objective_id=parent_objective_id)
    made = caller(ctx).patch(f"/v1/objectives/{checked_id(objective_id, 'objective_id')}", changes)
    return answer(f"Changed objective “{made['name']}” [id {made['id']}]: {', '.join(changes) or 'nothing'}.",
                  {"objective": made})


def given(ctx, **values):
    """The fields the call named (a null among them clears the field), whatever their value: merge semantics."""
    named = sent_arguments(ctx)
    return {name: value for name, value in values.items() if name in named}


def sent_arguments(ctx):
    """The names of the arguments the call sent, as sent (the SDK hands the tool defaults for the others)."""
    params = ctx._input_params  # the SDK keeps the call's params there; no public accessor tells absent from null
    return set(getattr(params, "arguments", None) or {})


@tool(EDITS, "Changes a key result: only the fields given change; figures as people write them, with its unit.")
def update_key_result(key_result_id: Id, ctx: Context, name: Annotated[str | None, Field(max_length=500)] = None,
                      target: Figure | None = None, target_max: Figure | None = None, owner_id: Id | None = None,
                      unit: Annotated[str | None, Field(max_length=12)] = None,
                      unit_position: Literal["before", "after"] | None = None) -> CallToolResult:
    current = caller(ctx)
    key_result_id = checked_id(key_result_id, "key_result_id")
    named = sent_arguments(ctx)
    node = key_result_node(current, key_result_id)["key_result"]
    shown_unit = unit if "unit" in named else node["unit"]
    position = unit_position if "unit_position" in named else node["unit_position"]
    changes = {}
    for field, value in (("name", name), ("owner_id", owner_id), ("unit", unit), ("unit_position", unit_position)):
        if field in named:
            changes[field] = value
    for field, wire, value in (("target", "target_value_min", target), ("target_max", "target_value_max", target_max)):
        if field in named:
            changes[wire] = number(value, field, shown_unit, position)
    made = current.patch(f"/v1/keyresults/{key_result_id}", changes)
    return answer(f"Changed key result “{made['name']}” [id {made['id']}]: {', '.join(changes) or 'nothing'}.",
                  {"key_result": made})


# Resources


def as_json(value):
    return json.dumps(value, ensure_ascii=False, indent=1)


def refusals_as_resource_errors(read):
    """A CallFailed (the API's refusal) becomes the SDK's resource error with its message, which the SDK answers
    as an MCP error and logs in one line, without a traceback: not found for an id that names nothing here."""
    @functools.wraps(read)
    def guarded(*args, **kwargs):
        try:
            return read(*args, **kwargs)
        except CallFailed as failed:
            error = ResourceNotFoundError if failed.status in (400, 404) else ResourceError
            raise error(str(failed)) from None
    return guarded


@server.resource("okr://cycles", name="cycles", description="The delivery cycles, newest first, with their "
                                                              "progress.", mime_type="application/json")
@refusals_as_resource_errors
def cycles_resource() -> str:
    return as_json([{**s["cycle"], "progress": s["progress"]} for s in CALLER.get().read(cycles_listed)])


@server.resource("okr://cycles/{cycle_id}", name="cycle", description="A cycle's report: its objectives and key "
                                                                       "results with progress and status.",
                 mime_type="application/json")
@refusals_as_resource_errors
def cycle_resource(cycle_id: str) -> str:
    return as_json(CALLER.get().get(f"/v1/cycles/{checked_id(cycle_id, 'cycle_id')}/report"))


@server.resource("okr://objectives/{objective_id}", name="objective",
                 description="An objective with its key results, progress and status.", mime_type="application/json")
@refusals_as_resource_errors
def objective_resource(objective_id: str) -> str:
    return as_json(CALLER.get().get(f"/v1/objectives/{checked_id(objective_id, 'objective_id')}/report"))


@server.resource("okr://keyresults/{key_result_id}", name="key result",
                 description="A key result and its check-ins.", mime_type="application/json")
@refusals_as_resource_errors
def key_result_resource(key_result_id: str) -> str:
    current = CALLER.get()
    key_result_id = checked_id(key_result_id, "key_result_id")
    return as_json({"key_result": current.get(f"/v1/keyresults/{key_result_id}"),
                    "checkins": current.get(f"/v1/keyresults/{key_result_id}/checkins")["checkins"]})


# Prompts


@server.prompt(name="weekly_check_in", title="Weekly check-in",
               description="Walks the person through this week's check-ins, one key result at a time.")
def weekly_check_in() -> list[UserMessage]:
    return [UserMessage(
        "Help me with my weekly OKR check-in. Call my_week, then take the key results that need a check-in one at a "
        "time: tell me where each stands, ask me for its new value, my confidence and a short comment, and record "
        "it with check_in only once I have answered. End with a two-line summary of what moved.")]


@server.prompt(name="prepare_quarter_review", title="Prepare the quarter review",
               description="Drafts the review of a cycle: what went well, what is off track and why, what to "
                           "decide.")
def prepare_quarter_review(cycle_id: str | None = None) -> list[UserMessage]:
    # Optional: a client that asks without it gets the current cycle's review, not an error (and no traceback).
    which = f"the cycle {cycle_id}" if cycle_id else "the current cycle (list_cycles finds it)"
    return [UserMessage(
        f"Prepare the review of {which}. Call cycle_summary for it, then get_key_result for each key "
        "result that is off track or at risk, and activity for the cycle. Write: the headline in two sentences; "
        "what went well; what is off track and why, with the evidence of the check-ins and comments; and the "
        "decisions the team should take. Change nothing.")]
