"""Clients generated from /v1/openapi.json work (issue 34): openapi-python-client's and openapi-generator's Python
clients are imported and call a real server on loopback, signing each request through a hook as docs/api.md
shows; openapi-generator's typescript-fetch client goes through the TypeScript compiler (pinned in
tests/clients/package-lock.json, installed there with `npm ci` when missing).

Each generator runs once for the module. The generators come with the test extra (openapi-python-client, and
openapi-generator-cli, which carries openapi-generator's jar); openapi-generator needs Java (Debian's
default-jre-headless, which .ci/run installs) and the TypeScript check Node.js and npm. Without them these tests
skip, saying so, and fail instead under CI.
"""
import hashlib
import hmac
import importlib
import json
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from helpers import REPO, create_key, in_ci, make_user, npm_installed, served_in_thread
from okr import create_app
from okr.db import init_db
from okr.rules.request_signature import authorization_header

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("generated-clients")]  # one worker generates once

BIN = Path(sys.executable).parent
TYPESCRIPT_DIR = REPO / "tests" / "clients"
GENERATOR_TIMEOUT = 300


def needs(problem):
    if problem:
        message = f"generated clients: {problem}"
        if in_ci():
            pytest.fail(f"{message} (CI is set, so this fails instead of skipping)", pytrace=False)
        pytest.skip(message)


def tool(name):
    path = BIN / name
    return path if path.exists() else None


def run(command, cwd, timeout=GENERATOR_TIMEOUT):
    """Runs a generator or the compiler; its output is the failure's message."""
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{command[0]} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The service on loopback with an API key (so that every request must be signed), a user, and the OpenAPI
    document it serves, in a file."""
    folder = tmp_path_factory.mktemp("generated-clients")
    app = create_app({"TESTING": True, "DATABASE": folder / "okr.db"})
    with app.app_context():
        init_db()
    runner = app.test_cli_runner()
    key = create_key(runner)
    user = make_user(runner)
    document = folder / "okr-openapi.json"
    document.write_bytes(app.test_client().get("/v1/openapi.json").get_data())
    with served_in_thread(app) as server:
        yield {"url": server.url, "key": key, "user": user, "document": document, "folder": folder}


def import_fresh(folder, package):
    sys.path.insert(0, str(folder))
    try:
        importlib.invalidate_caches()
        return importlib.import_module(package)
    finally:
        sys.path.remove(str(folder))


# --- openapi-python-client ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_client(served):
    """The package openapi-python-client generates (okr_service_client), imported."""
    generator = tool("openapi-python-client")
    needs(None if generator else "openapi-python-client is not installed (pip install -e '.[test]')")
    # --meta none: the package alone, its files written straight into the output folder.
    out = served["folder"] / "okr_service_client"
    run([generator, "generate", "--path", served["document"], "--output-path", out, "--meta", "none"],
        cwd=served["folder"])
    return import_fresh(served["folder"], "okr_service_client")


API_MD = REPO / "docs" / "api.md"


def docs_block(language, containing):
    """The code block of docs/api.md in language that contains the text."""
    blocks = re.findall(rf"```{language}\n(.*?)```", API_MD.read_text(), re.DOTALL)
    (block,) = [block for block in blocks if containing in block]
    return block


def signing_hook(key):
    """docs/api.md's httpx event hook, as written there: a fresh Authorization header on every request."""
    source = re.search(r"^def sign\(request\):.*?(?=^\S)", docs_block("python", "def sign(request)"),
                       re.DOTALL | re.MULTILINE).group(0)
    namespace = {"hashlib": hashlib, "hmac": hmac, "datetime": datetime, "timezone": timezone,
                 "CREDENTIAL": key["credential"], "SECRET": key["secret"]}
    exec(source, namespace)
    return namespace["sign"]


def test_openapi_python_client_calls_the_service_signed_through_an_httpx_hook(python_client, served):
    from okr_service_client import Client
    from okr_service_client.api.cycles import create_cycle, list_cycles, update_cycle
    from okr_service_client.api.key_results import create_key_result
    from okr_service_client.api.objectives import create_objective
    from okr_service_client.models import (ApiError, CycleInput, CyclePatch, KeyResultInputPositive,
                                           KeyResultInputPositiveType, KeyResultPositive, ObjectiveInput)

    with Client(base_url=served["url"]) as unsigned:
        refused = list_cycles.sync_detailed(client=unsigned)
    assert refused.status_code == 401 and isinstance(refused.parsed, ApiError)

    client = Client(base_url=served["url"], httpx_args={"event_hooks": {"request": [signing_hook(served["key"])]}})
    with client:
        created = create_cycle.sync_detailed(client=client, body=CycleInput(name="2027 Q1"))
        assert created.status_code == 200 and created.parsed.name == "2027 Q1"
        # The create's ETag makes the first edit conditional without a GET.
        changed = update_cycle.sync_detailed(created.parsed.id, client=client, body=CyclePatch(ends_on="2027-03-31"),
                                             if_match=created.headers["ETag"])
        assert changed.status_code == 200 and changed.parsed.state.value in ("current", "upcoming", "finished")
        assert str(changed.parsed.ends_on) == "2027-03-31"
        stale = update_cycle.sync_detailed(created.parsed.id, client=client, body=CyclePatch(name="x"),
                                           if_match=created.headers["ETag"])
        assert stale.status_code == 412 and isinstance(stale.parsed, ApiError)
        page = list_cycles.sync(client=client, page_size=1)
        assert len(page.cycles) == 1 and page.next_page_token is None
        objective = create_objective.sync(client=client, body=ObjectiveInput(
            name="Grow", cycle_id=created.parsed.id, is_company=True, is_personal=False))
        key_result = create_key_result.sync(objective.id, client=client, body=KeyResultInputPositive(
            name="Customers", type_=KeyResultInputPositiveType.POSITIVE, target_value_min="100"))
        assert isinstance(key_result, KeyResultPositive) and key_result.target_value_min == "100.00"


# --- openapi-generator ---------------------------------------------------------------------------------------


def problem_with_openapi_generator():
    if tool("openapi-generator-cli") is None:
        return "openapi-generator-cli is not installed (pip install -e '.[test]')"
    if shutil.which("java") is None:
        return "no java on PATH (openapi-generator's jar needs it: apt-get install default-jre-headless)"
    return None


def openapi_generator(served, language, out, *options):
    needs(problem_with_openapi_generator())
    run([tool("openapi-generator-cli"), "generate", "-i", served["document"], "-g", language, "-o", out,
         *options], cwd=served["folder"])
    return out


@pytest.fixture(scope="module")
def generator_python_client(served):
    out = openapi_generator(served, "python", served["folder"] / "og-python", "--package-name", "okr_generated",
                            "--global-property", "apiTests=false,modelTests=false,apiDocs=false,modelDocs=false")
    return import_fresh(out, "okr_generated")


def test_openapi_generator_python_client_calls_the_service(generator_python_client, served):
    okr_generated = generator_python_client
    key = served["key"]
    configuration = okr_generated.Configuration(host=served["url"])

    def refresh(configuration):  # asked before every request: a fresh signature each time
        configuration.api_key["S1-HMAC-SHA256"] = authorization_header(
            key["credential"], key["secret"], datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))

    configuration.refresh_api_key_hook = refresh
    configuration.api_key["S1-HMAC-SHA256"] = ""  # the hook is asked only for a key that is there
    with okr_generated.ApiClient(configuration) as api_client:
        teams = okr_generated.TeamsApi(api_client)
        created = teams.create_team_with_http_info(okr_generated.TeamInput(name="Platform"))
        assert created.status_code == 200 and created.data.name == "Platform"
        headers = {name.lower(): value for name, value in created.headers.items()}
        assert headers["etag"].startswith('"'), headers
        member = teams.add_team_member(str(created.data.id), served["user"]["id"])
        assert member.email == served["user"]["email"]
        listed = teams.list_team_members(str(created.data.id))
        assert [user.name for user in listed.users] == [served["user"]["name"]] and listed.next_page_token is None
        me = okr_generated.UsersApi(api_client).get_me()
        assert me.key.credential == key["credential"] and me.user is None


def problem_with_typescript(config):
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "no node or npm on PATH (apt-get install nodejs npm)"
    return npm_installed(config, TYPESCRIPT_DIR, "typescript")


def test_openapi_generator_typescript_fetch_client_compiles(served, request):
    needs(problem_with_typescript(request.config))
    out = openapi_generator(served, "typescript-fetch", served["folder"] / "og-typescript")
    names = {path.stem for path in (out / "apis").glob("*Api.ts")}
    document = json.loads(served["document"].read_text())
    assert names == {f"{tag['name']}Api" for tag in document["tags"]}  # one API class per tag
    assert {"KeyResultsApi", "SearchApi", "UsersApi"} <= names
    assert "createKeyResult(" in (out / "apis" / "KeyResultsApi.ts").read_text()
    # Its models are the document's schemas, each named for what it is: none made up from a field's context.
    schemas = document["components"]["schemas"]
    models = {path.stem for path in (out / "models").glob("*.ts")} - {"index"}
    assert models <= set(schemas), sorted(models - set(schemas))
    # docs/api.md's signing middleware compiles against it too.
    example = docs_block("ts", "signedConfiguration").replace('from "./okr-client-ts"', 'from "./index"')
    (out / "signing.ts").write_text(example)
    run(["node", TYPESCRIPT_DIR / "node_modules" / "typescript" / "bin" / "tsc", "--noEmit", "--strict",
         "--target", "es2020", "--lib", "es2020,dom", "--module", "es2020", "--moduleResolution", "node",
         "index.ts", "signing.ts"], cwd=out)
