"""The cycle page's review rows as HTML, written in Python rather than in a template (and an objective page's
key results, key_result_html).

Every row has the same columns (the stylesheet's grid): a key result's name, owner, value and target, progress
bar, status, dated trend and last update; an objective's group row has its name and who it is for where those
three are, then its progress and status in the key results' columns. Aligned objectives sit under their parent,
in a <details> (open when there are at most OPEN_UP_TO of them: more are folded, their count said).

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

from ..store import key_results
from . import wording


OPEN_UP_TO = 5


class Rows:
    """What every row of one page needs: names, owners' roles, sparklines' check-ins, the moment, links."""

    def __init__(self, team_names, user_names, user_roles, sparks, now, root="", link_objectives=False,
                 fold=True):
        self.team_names, self.user_names, self.user_roles, self.sparks, self.now = (
            team_names, user_names, user_roles, sparks, now)
        self.links = escape(root) + "/keyresults/"
        self.headings = escape(root) + "/objectives/" if link_objectives else None
        self.fold = fold  # False: every <details> open (a filtered page: what matched shows)


def review_html(objectives, rows):
    """The objectives (report nodes, with their children) as <article>s of rows."""
    out = []
    for objective in objectives:
        objective_html(objective, rows, out)
    return Markup("".join(out))


def objective_html(o, rows, out):
    kind = "company" if o["is_company"] else "personal" if o["is_personal"] else "team"
    meta = f"<span class=badge>{kind}</span>"
    if o["team_id"]:
        meta += f" team {escape(rows.team_names.get(o['team_id'], '?'))}"
    if o["assignee_id"]:
        meta += f" · {escape(rows.user_names.get(o['assignee_id'], '?'))}"
    name = escape(o["name"])
    if rows.headings is not None:
        name = f'<a href="{rows.headings}{escape(o["id"])}">{name}</a>'
    status = o.get("status")
    said = f"<span class=status>{wording.STATUS_WORDS[status]}</span>" if status else ""
    bar = ""
    if o["progress"] is not None:
        source = " <span class=from-children>from aligned objectives</span>" if o.get("progress_from") == "children" else ""
        bar = f"{progress_bar(o['progress'])} {wording.percent(o['progress'])}{source}"
    count = len(o["key_results"])
    out.append(f'<article class="objective {status or ""}" id="o-{escape(o["id"])}"><div class=g>'
               f'<div class=n><h3>{name}</h3> <span class=meta>{meta}</span></div><span class=p>{bar}</span>'
               f'<span class=s>{said}</span><span class=x>{count or ""}{" key result" if count else ""}'
               f'{"s" if count > 1 else ""}</span></div>')
    if o["description"]:
        out.append(f"<p class=description>{escape(wording.first_lines(o['description']))}</p>")
    if o["key_results"]:
        out.append("<ul class=key-results>")
        for k in o["key_results"]:
            out.append(review_row(k, rows))
        out.append("</ul>")
    elif not o["children"]:
        out.append("<p class=none>No key results yet.</p>")
    if o["children"]:
        many = len(o["children"])
        shut = rows.fold and many > OPEN_UP_TO
        out.append(f'<details class=children{"" if shut else " open"}><summary>{many} aligned '
                   f'objective{"" if many == 1 else "s"}</summary>')
        for child in o["children"]:
            objective_html(child, rows, out)
        out.append("</details>")
    out.append("</article>")


def review_row(k, rows):
    """A key result's row: name, owner, value and target, bar, status, dated trend, last update."""
    said = wording.target_words(k["type"], k["start_value"], k["current_value"], k["target_value_min"],
                                k["target_value_max"], k.get("unit"), k.get("unit_position"))
    bar = f"{progress_bar(k['progress'])} {wording.percent(k['progress'])}" if k["progress"] is not None else ""
    owner_id = k.get("owner_id")
    owner = ""
    if owner_id:
        owner = f'<span class=hidden-label>owner </span>{escape(rows.user_names.get(owner_id, "?"))}'
        # Made a viewer since they were given it: the key result keeps them but wants a new owner.
        if rows.user_roles.get(owner_id, OWNER) not in key_results.OWNER_ROLES:
            owner += " <strong class=wants-owner>needs a new owner</strong>"
    when = k["last_checkin_at"]
    stale = " <span class=stale>stale</span>" if k["stale"] else ""
    return (
        f'<li class={k["status"]}><span class=n><a href="{rows.links}{escape(k["id"])}">{escape(k["name"])}</a>'
        f' <span class=type>{escape(k["type"])}</span>{weight_badge(k)}{initiatives_note(k)}</span>'
        f'<span class=w>{owner}</span>'
        f'<span class=v>{escape(said)}</span><span class=p>{bar}</span>'
        f'<span class=s><span class=status>{wording.STATUS_WORDS[k["status"]]}</span>'
        f' <small>{wording.percent(k["confidence"])} confidence</small></span>'
        f'<span class=t>{trend(rows.sparks.get(k["id"], ()))}</span>'
        f'<span class=u><time datetime="{escape(when)}">{wording.time_ago(when, rows.now)}</time>{stale}</span></li>'
    )


def weight_badge(k):
    """What a key result's row says of its weight: nothing for the usual 1."""
    weight = k.get("weight", 1)
    if weight == 1:
        return ""
    return " <span class=weight>not counted</span>" if weight == 0 else f" <span class=weight>weight {weight:d}</span>"


def initiatives_note(k):
    """What a key result's row says of its initiatives: how many are done of how many (nothing without any), and
    whether they make its progress."""
    count = k.get("initiatives_count") or 0
    if not count and k.get("progress_from") != "initiatives":
        return ""
    source = ": its progress" if k.get("progress_from") == "initiatives" else ""
    return f' <small class=kr-initiatives>{k.get("initiatives_done") or 0}/{count} initiatives done{source}</small>'


OWNER = "editor"  # an owner whose role is unknown (a row written behind the API's back) wants nobody new


def trend(checkins):
    """A sparkline of (created_at, value) check-ins, oldest first, with the first and last days under it."""
    points = wording.sparkline([value for _, value in checkins])
    if not points:
        return ""
    first, last = escape(wording.day(checkins[0][0][:10], False)), escape(wording.day(checkins[-1][0][:10], False))
    # Drawn in the stylesheet's 60 × 16 pixels, so it needs no viewBox.
    return (f'<svg aria-hidden=true><polyline points="{points}"/></svg>'
            f'<small>{first}{"" if first == last else f" – {last}"}</small>')


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
        f' <span class=type>{escape(k["type"])}</span>{weight_badge(k)}{initiatives_note(k)} {escape(said)}{bar}'
        f' <span class=status>{wording.STATUS_WORDS[k["status"]]}</span> {wording.percent(k["confidence"])} confidence{stale}'
        f' <time datetime="{escape(when)}">{wording.time_ago(when, now)}</time>{spark}</li>'
    )


def progress_bar(figure):
    # max is 1 when left out.
    return f"<progress value={figure}>{wording.percent(figure)}</progress>"
