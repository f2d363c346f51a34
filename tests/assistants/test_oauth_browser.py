"""Sign-in for a remote assistant end to end: the MCP SDK's own OAuth client, given only the /mcp address of a real
waitress server, finds the metadata, registers, sends the person's browser (real Chromium, signed in with their
password) to the consent page, where they choose read and write and allow it; the browser goes on to the client's
loopback redirect (the page's form-action lets it), and the client's calls then act for the person, via its name.
"""
import asyncio
import json
import os
from urllib.parse import parse_qs, urlsplit

import pytest

from okr.db import transaction

from helpers import (CHROMIUM, CHROMIUM_FLAGS, free_port, in_ci, run_coroutine, served_in_thread,
                     user_with_password)

pytestmark = [pytest.mark.slow]  # a server and a browser

PASSWORD = "correct horse battery staple"


def chromium_or_skip():
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        problem = "Playwright is not installed: pip install -e '.[test]'"
    else:
        problem = None if os.access(CHROMIUM, os.X_OK) else f"no Chromium at {CHROMIUM}: apt-get install chromium"
    if problem:
        if in_ci():
            pytest.fail(problem)
        pytest.skip(problem)


class Tokens:
    """The SDK's token storage, in memory."""

    def __init__(self):
        self.tokens = self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def test_the_sdks_oauth_client_signs_in_through_the_consent_page_in_chromium(app, client, okrs):
    chromium_or_skip()
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
    from playwright.async_api import async_playwright

    maya = user_with_password(app, PASSWORD, role="editor")
    callback = f"http://127.0.0.1:{free_port()}/callback"
    seen = {}

    async def session(root):
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                                       args=CHROMIUM_FLAGS)
            page = await (await browser.new_context(viewport={"width": 375, "height": 740},
                                                    color_scheme="dark")).new_page()
            page.set_default_timeout(15_000)
            await page.goto(root + "/login")
            await page.fill("#email", maya["email"])
            await page.fill("#password", PASSWORD)
            await page.click("button[type=submit]")
            await page.wait_for_url(root + "/")
            arrived = asyncio.get_running_loop().create_future()

            async def at_callback(route):
                if not arrived.done():
                    arrived.set_result(route.request.url)
                await route.fulfill(status=200, content_type="text/html", body="<p>You may close this page.</p>")
            await page.route(callback + "*", at_callback)

            async def show_consent(authorization_url):
                await page.goto(authorization_url)
                seen["heading"] = await page.text_content("h1")
                await page.check("input[name=rights][value=write]")
                await page.click("button[value=allow]")

            async def code_from_callback():
                query = parse_qs(urlsplit(await asyncio.wait_for(arrived, 15)).query)
                return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])

            auth = OAuthClientProvider(
                root + "/mcp",
                OAuthClientMetadata(client_name="Claude", redirect_uris=[callback],
                                    grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                    token_endpoint_auth_method="none"),
                Tokens(), redirect_handler=show_consent, callback_handler=code_from_callback)
            try:
                async with httpx2.AsyncClient(auth=auth, timeout=30) as http, \
                        Client(streamable_http_client(root + "/mcp", http_client=http), mode="legacy") as mcp:
                    me = await mcp.call_tool("whoami", {})
                    checked = await mcp.call_tool("check_in", {"key_result_id": okrs["signups"]["id"], "value": "9"})
            finally:
                await browser.close()
            return me, checked

    with served_in_thread(app, threads=8) as served:
        me, checked = run_coroutine(lambda: session(served.url))
    assert seen["heading"] == "Connect “Claude”?"
    assert me.structured_content["assistant"] == "Claude" and me.structured_content["may_write"] is True
    assert me.structured_content["user"]["email"] == maya["email"]
    assert not checked.is_error
    with app.app_context(), transaction(write=False) as db:
        actor = db.execute("SELECT actor FROM events WHERE type = 'checkin.created' ORDER BY seq DESC").fetchone()[0]
    assert json.loads(actor) == {"type": "user", "id": maya["id"], "name": "Maya Lee", "via": "Claude"}
