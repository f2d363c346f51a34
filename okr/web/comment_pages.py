"""Comments on the objective and key result pages: the list and the form under each (templates/comments.html,
which a page includes with comment_thread), and /comments/<id>/edit and /comments/<id>/delete.

The body is plain text, shown escaped with its line breaks, each mention (okr.rules.mentions) a link to the
person, with a note beside a comment whose name matched two people; it is checked by the API's CommentSchema and written
by okr.store.comments. Viewers see the comments but get no form; only a comment's author or an admin changes
or deletes it (okr.accounts.access.may_change_comment).
"""
from flask import g, redirect, render_template, request, url_for

from ..accounts import access, sessions
from ..db import get_db
from ..errors import Invalid
from ..rules import mentions
from ..rules.body_schemas import comment_schema
from ..store import comments, notifications
from . import editing
from .errors import PageError
from .objective_pages import show_objective
from .views import bp, now, render_key_result

# The most comments a page shows, the latest ones; the API lists them all.
SHOWN = 100
# Where each kind of parent is shown, and the column that names it.
PAGES = {"objective": ("web.show_objective", "objective_id"), "key_result": ("web.show_key_result", "key_result_id")}
NOT_YOURS = "Only a comment's author or an admin may change or delete it."


@bp.app_template_global()
def comment_thread(kind, parent_id):
    """What comments.html shows under an objective or a key result (kind): its latest comments oldest first,
    each with its author's name and whether this person may change it, and the form (what was typed and why it
    was refused, when a comment just was)."""
    rows = comments.latest(get_db(), PAGES[kind][1], parent_id, SHOWN + 1)
    actor = access.current_actor()
    people = notifications.people(get_db())
    emails = {person_id: email for person_id, _, email in people}
    shown = []
    for row in reversed(rows[:SHOWN]):
        found = mentions.find(row["body"], people)
        shown.append({**row, "may_change": access.may_change_comment(actor, row), "pieces": found.pieces,
                      "notes": [mentions.ambiguity_note(name) for name in found.ambiguous]})
    return {"comments": shown, "more": len(rows) > SHOWN, "moment": now(), "emails": emails,
            "suggestions": mentions.suggestions(people),
            "action": url_for(f"web.comment_on_{kind}", **{PAGES[kind][1]: parent_id}),
            "form": g.get("comment_form", {"body": ""}), "errors": g.get("comment_errors", {})}


@bp.app_template_global()
def mention_pieces(text):
    """A text's pieces as comments.html shows a comment's (okr.rules.mentions: plain text, people, ambiguous
    names), each person's with the email their link searches for: for a reflection, on the retrospective page."""
    if "people" not in g:
        g.people = notifications.people(get_db())
    emails = {person_id: email for person_id, _, email in g.people}
    return [{**piece._asdict(), "email": emails.get(piece.person_id)} for piece in mentions.find(text, g.people).pieces]


def checked(form):
    """The typed body as CommentSchema's values (a browser's CRLF line breaks as LF), after `@` and the person picked
    in the form's Mention field when one was; Invalid beside the field."""
    body = form["body"].replace("\r\n", "\n")
    mention = (form.get("mention") or "").strip().lstrip("@")
    if mention and body.strip():
        body = f"@{mention} {body}"
    return editing.load(comment_schema, {"body": body})


def written(kind, parent_id, show):
    """Writes the posted comment on a parent, and goes back to it; refused, its page again (show(parent_id)) with
    the typed text and why beside the field."""
    form = editing.typed(("body", "mention"))
    try:
        body = checked(form)["body"]
    except Invalid as error:
        comments.parent(get_db(), kind, parent_id)  # an unknown parent is a 404, whatever was typed
        g.comment_form, g.comment_errors = form, error.fields
        return show(parent_id), 400
    row = comments.create(get_db(), kind, parent_id, body, access.person_id())
    return redirect(parent_url(row, f"c-{row['id']}"), 303)


@bp.post("/objectives/<objective_id>/comments")
@sessions.editors_only
@editing.unlocked
def comment_on_objective(objective_id):
    """Adds a comment to an objective from the form under it."""
    return written("objective", objective_id, show_objective)


@bp.post("/keyresults/<key_result_id>/comments")
@sessions.editors_only
@editing.unlocked
def comment_on_key_result(key_result_id):
    """Adds a comment to a key result from the form under it."""
    return written("key_result", key_result_id, render_key_result)


def parent_url(comment, anchor="comments"):
    """The page of what a comment is on, at the anchor."""
    kind = "objective" if comment["objective_id"] is not None else "key_result"
    endpoint, column = PAGES[kind]
    return url_for(endpoint, **{column: comment[column]}, _anchor=anchor)


def changeable(comment_id):
    """The comment this person may change; a 404 page when missing, a 403 page unless theirs or an admin's."""
    row = comments.get(get_db(), comment_id)
    if not access.may_change_comment(access.current_actor(), row):
        raise PageError(403, "Not allowed", NOT_YOURS)
    return row


@bp.route("/comments/<comment_id>/edit", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def edit_comment(comment_id):
    """Shows a comment's form, and saves it unless someone changed it meanwhile."""
    stored = changeable(comment_id)

    def render(form, errors=None, conflict=None, revision=None, original=None):
        return render_template("comment-form.html", comment=stored, back=parent_url(stored, f"c-{stored['id']}"),
                               form=form, errors=errors or {}, conflict=conflict, revision=revision,
                               original=original)

    def save(values):
        comments.update(get_db(), stored, values["body"])
        return redirect(parent_url(stored, f"c-{stored['id']}"), 303)

    return editing.edit_page(("body",), {"body": stored["body"]}, stored["revision"], render, checked, save,
                             {"body": "the comment"})


@bp.route("/comments/<comment_id>/delete", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def delete_comment(comment_id):
    """Asks before deleting a comment, and deletes it."""
    stored = changeable(comment_id)
    if request.method == "GET":
        return editing.confirm_delete("Delete a comment", "this comment", [], parent_url(stored, f"c-{stored['id']}"))
    comments.delete(get_db(), stored)
    return redirect(parent_url(stored), 303)
