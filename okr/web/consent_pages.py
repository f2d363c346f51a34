"""The consent page of sign-in for remote assistants (okr.accounts.oauth_server does the OAuth): an
assistant sends the person to /oauth/authorize; signed in (or sent to sign in first, as for any page), they see
which assistant asks, and where it will be sent back, choose read only or read and write, and allow or deny.

Any role may allow an assistant (a viewer's only reads): the page acts on the person's own account. The form posts
here with its CSRF token; the answer sends the browser on to the assistant's redirect URI, which the page's
form-action allows (as the sign-in page allows the identity provider's).
"""
from flask import current_app, g, render_template, request

from ..accounts import access, assistant_grants, sessions
from ..db import get_db
from ..store import users
from .errors import PageError
from .views import bp


def oauth():
    """okr.accounts.oauth_server, imported at the first consent page (Authlib with it)."""
    from ..accounts import oauth_server
    return oauth_server


def consent_grant(user):
    """Authlib's grant for this authorization request; a page saying what is wrong when the client or its redirect
    URI is not one to send anything to, else a redirect with the error, as OAuth asks. Every resource (RFC 8707)
    named must be this server's /mcp."""
    from authlib.oauth2.rfc6749.errors import OAuth2Error
    oauth_server = oauth()
    server = oauth_server.server_of(current_app)
    try:
        grant = server.get_consent_grant(end_user=user)
        if oauth_server.foreign_resource(request.values.getlist("resource")) is not None:
            raise OAuth2Error("the resource (RFC 8707) must be this server's /mcp", error="invalid_target",
                              state=grant.request.payload.state, redirect_uri=grant.redirect_uri)
        return grant
    except OAuth2Error as error:
        if getattr(error, "redirect_uri", None):
            return server.handle_error_response(None, error)
        raise PageError(400, "This assistant cannot connect", f"{error.error}: {error.get_error_description()}"
                                                              if error.description else error.error) from None
    except ValueError:  # Authlib's error for a value it would not repeat (one outside printable ASCII)
        raise PageError(400, "This assistant cannot connect", "invalid_request: the request holds a value that is "
                                                              "not printable ASCII") from None


def form_target(redirect_uri):
    """The form-action source that lets the consent form's answer go on to the redirect URI (its scheme, host and
    port, parsed); a page saying so for one this server no longer sends to (registered before its checks)."""
    source = oauth().form_action_source(redirect_uri)
    if source is None:
        raise PageError(400, "This assistant cannot connect", "Its redirect URI is not one this server sends to: "
                                                              "it must register again.")
    return source


def the_person():
    actor = access.current_actor()
    if actor is None or actor.user_id is None:
        raise PageError(403, "No account", "Sign in as yourself to connect an assistant: it will act as you.")
    return dict(users.get(get_db(), actor.user_id))


@bp.get("/oauth/authorize")
def show_consent():
    """Shows which assistant asks to act for the signed-in person, with read only or read and write to choose."""
    user = the_person()
    grant = consent_grant(user)
    if not hasattr(grant, "request"):
        return grant  # the error's redirect
    redirect_uri = grant.redirect_uri or grant.client.get_default_redirect_uri()
    g.form_targets = [form_target(redirect_uri)]
    asked = (grant.request.payload.scope or "").split()
    return render_template("consent.html", client=grant.client, user=user, redirect_uri=redirect_uri,
                           may_write=user["role"] != "viewer" and not access.current_actor().read_only,
                           asks_write=assistant_grants.WRITE_SCOPE in asked or not asked,
                           action=request.full_path)


@bp.post("/oauth/authorize")
@sessions.own_account
def answer_consent():
    """Allows or denies the assistant: a code for it, or access_denied, sent to its redirect URI."""
    user = the_person()
    grant = consent_grant(user)
    if not hasattr(grant, "request"):
        return grant
    allowed = request.form.get("decision") == "allow"
    write = (request.form.get("rights") == "write" and user["role"] != "viewer"
             and not access.current_actor().read_only)
    g.consented_scope = " ".join(assistant_grants.SCOPES) if write else assistant_grants.READ_SCOPE
    server = oauth().server_of(current_app)
    return server.create_authorization_response(grant_user=user if allowed else None, grant=grant)
