"""The cycle page's alignment tree as HTML, written in Python rather than in a template.

A cycle of 1,000 objectives has 4,000 key results; as Jinja macros they took
five times as long to render as the cycle's JSON report took to build. The
markup is kept terse: nothing a browser infers or a key result's link already
says (its id, the exact time a <time>'s datetime holds, a <progress>'s max of
1). Every value that comes from the database is escaped, ids, types and times
included: the service writes them well formed, but a restored backup or a row
written behind its back need not be. html.escape, not markupsafe's escape: a Markup costs far more in
an f-string, and a big cycle's page escapes four values for each of its thousands of key results.
"""
from html import escape

from markupsafe import Markup

from . import wording


def tree_html(objectives, team_names, user_names, sparks, now, root="", link_objectives=False):
    """The objectives (report nodes, with their children) as nested <article>s.

    root is the path the app is mounted at ("" at the host's root, "/okr" under
    DispatcherMiddleware): the key results' links start with it. It is worked out
    once per page by the view, not with url_for per row. link_objectives: whether
    each objective's heading links to its page (/objectives/<id>, another module's).
    """
    out = []
    links = escape(root) + "/keyresults/"
    headings = escape(root) + "/objectives/" if link_objectives else None
    for objective in objectives:
        objective_html(objective, team_names, user_names, sparks, now, links, out, headings)
    return Markup("".join(out))


def objective_html(o, team_names, user_names, sparks, now, links, out, headings=None):
    kind = "company" if o["is_company"] else "personal" if o["is_personal"] else "team"
    meta = f'<span class=badge>{kind}</span>'
    if o["team_id"]:
        meta += f" · team {escape(team_names.get(o['team_id'], '?'))}"
    if o["assignee_id"]:
        meta += f" · {escape(user_names.get(o['assignee_id'], '?'))}"
    name = escape(o["name"])
    if headings is not None:
        name = f'<a href="{headings}{escape(o["id"])}">{name}</a>'
    status = o.get("status")
    if status is not None:
        meta += f' · <span class=status>{wording.STATUS_WORDS[status]}</span>'
    out.append(f'<article class=objective id="o-{escape(o["id"])}"><h3>{name}</h3>'
               f'<p class="meta {status or ""}">{meta}</p>')
    if o["description"]:
        out.append(f"<p class=description>{escape(wording.first_lines(o['description']))}</p>")
    if o["progress"] is not None:
        source = " <span class=from-children>from aligned objectives</span>" \
            if o.get("progress_from") == "children" else ""
        out.append(f"<p>{progress_bar(o['progress'])} {wording.percent(o['progress'])}{source}</p>")
    if o["key_results"]:
        out.append("<ul class=key-results>")
        for k in o["key_results"]:
            out.append(key_result_html(k, sparks.get(k["id"], ()), now, links, user_names))
        out.append("</ul>")
    else:
        out.append("<p class=none>No key results yet.</p>")
    if o["children"]:
        out.append("<div class=children>")
        for child in o["children"]:
            objective_html(child, team_names, user_names, sparks, now, links, out, headings)
        out.append("</div>")
    out.append("</article>")


def key_result_html(k, spark_values, now, links="/keyresults/", user_names=None):
    said = wording.target_words(k["type"], k["start_value"], k["current_value"], k["target_value_min"],
                              k["target_value_max"], k.get("unit"), k.get("unit_position"))
    bar = f" {progress_bar(k['progress'])}" if k["progress"] is not None else ""
    stale = " <span class=stale>stale</span>" if k["stale"] else ""
    points = wording.sparkline(spark_values)
    # Drawn in the stylesheet's 60 × 16 pixels, so it needs no viewBox.
    spark = f'<svg aria-hidden=true><polyline points="{points}"/></svg>' if points else ""
    when = k["last_checkin_at"]
    owner_id = k.get("owner_id")
    owner = f' <span class=owner>owner {escape((user_names or {}).get(owner_id, "?"))}</span>' if owner_id else ""
    return (
        f'<li class={k["status"]}><a href="{links}{escape(k["id"])}">{escape(k["name"])}</a>{owner}'
        f' <span class=type>{escape(k["type"])}</span> {escape(said)}{bar}'
        f' <span class=status>{wording.STATUS_WORDS[k["status"]]}</span> {wording.percent(k["confidence"])} confidence{stale}'
        f' <time datetime="{escape(when)}">{wording.time_ago(when, now)}</time>{spark}</li>'
    )


def progress_bar(figure):
    # max is 1 when left out.
    return f"<progress value={figure}>{wording.percent(figure)}</progress>"
