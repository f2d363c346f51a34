"""The server's own look at the replica, for when Litestream has not caught up for a while and says nothing.

Litestream 0.5's S3 client tries a failed request again and again (ten attempts, waiting longer each time) before
it logs the error, so with the store gone its log stays silent meanwhile (docs/design.md has it measured).
okr/server/replication.py then asks the replica itself, as Litestream would reach it: one signed listing of at
most one name under the replica's path (S3, the same endpoint, region and credentials from the environment), or
the replica's folder (a file replica). Flask-free; the answer is one line without secrets, or None when the
replica answers.
"""
import hashlib
import hmac
import os
import re
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone

from .litestream import shown

# One look waits this long for the store at most (to connect, then for its answer).
TIMEOUT_SECONDS = 5
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
DEFAULT_REGION = "us-east-1"


def check(replica_settings, environ=None, timeout=TIMEOUT_SECONDS):
    """Why the replica cannot take Litestream's uploads (one line), or None when it answers."""
    env = os.environ if environ is None else environ
    url = replica_settings["url"]
    if url.startswith("file:"):
        return check_folder(urllib.parse.unquote(urllib.parse.urlsplit(url).path))
    return check_s3(replica_settings, env, timeout)


# --- a folder ---------------------------------------------------------------------------------------------


def check_folder(path):
    """Whether Litestream can write in the folder path, or make it: the nearest folder that exists must let it."""
    existing = path
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"the replica's folder {path} cannot be made: {existing} is not a folder"
    try:
        # Made and removed at once: what Litestream does with its files, and a read-only disk, show here.
        descriptor, name = tempfile.mkstemp(prefix=".okr-replica-check-", dir=existing)
        os.close(descriptor)
        os.remove(name)
    except OSError as error:
        what = f"cannot write in the replica's folder {path}" if existing == path else \
            f"cannot make the replica's folder {path} in {existing}"
        return f"{what}: {error.strerror or error}"
    return None


# --- S3 ---------------------------------------------------------------------------------------------------


def s3_target(replica_settings, env):
    """(endpoint, path style, region or None, bucket, prefix, skip TLS verification) as Litestream reads the replica."""
    parts = urllib.parse.urlsplit(replica_settings["url"])
    query = urllib.parse.parse_qs(parts.query)
    endpoint = replica_settings.get("endpoint") or first(query, "endpoint") or env.get("LITESTREAM_S3_ENDPOINT")
    if endpoint and "://" not in endpoint:
        local = urllib.parse.urlsplit("//" + endpoint).hostname in ("localhost", "127.0.0.1", "::1")
        endpoint = ("http://" if local else "https://") + endpoint  # as Litestream completes it
    region = replica_settings.get("region") or first(query, "region") or (DEFAULT_REGION if endpoint else None)
    path_style = bool(endpoint) and (first(query, "forcePathStyle") or first(query, "force-path-style")) != "false"
    skip = (first(query, "skipVerify") or first(query, "skip-verify") or "").lower() == "true"
    return endpoint, path_style, region, parts.hostname, parts.path.strip("/"), skip


def first(query, name):
    values = query.get(name)
    return values[0] if values else None


def check_s3(replica_settings, env, timeout):
    endpoint, path_style, region, bucket, prefix, skip_verify = s3_target(replica_settings, env)
    key = env.get("AWS_ACCESS_KEY_ID") or env.get("LITESTREAM_ACCESS_KEY_ID")
    secret = env.get("AWS_SECRET_ACCESS_KEY") or env.get("LITESTREAM_SECRET_ACCESS_KEY")
    credentials = (key, secret, env.get("AWS_SESSION_TOKEN")) if key and secret else None
    answer = list_once(endpoint, path_style, region or DEFAULT_REGION, bucket, prefix, credentials, skip_verify,
                       timeout)
    if region is None and answer.get("region") and answer["region"] != DEFAULT_REGION:
        # AWS itself, no region given: Litestream looks the bucket's up, and so does this, once.
        answer = list_once(endpoint, path_style, answer["region"], bucket, prefix, credentials, skip_verify, timeout)
    if "error" in answer:
        return answer["error"]
    if answer["status"] < 300 or credentials is None:
        # Without keys in the environment (a profile, an instance role) only the network is judged: any answer will do.
        return None
    where = shown(answer["url"])
    return f"the S3 store at {where} answered {answer['status']} {answer['reason']}"


def list_once(endpoint, path_style, region, bucket, prefix, credentials, skip_verify, timeout):
    """One ListObjectsV2 of at most one name under prefix: {"status", "reason", "url", "region"}, or {"error"}
    when no answer came."""
    if endpoint:
        base = urllib.parse.urlsplit(endpoint)
        scheme, folder = base.scheme, base.path.rstrip("/")
        host, path = (base.netloc, f"{folder}/{bucket}") if path_style else (f"{bucket}.{base.netloc}", folder or "/")
    else:
        scheme, host, path = "https", f"{bucket}.s3.{region}.amazonaws.com", "/"
    query = {"list-type": "2", "max-keys": "1", "prefix": f"{prefix}/" if prefix else ""}
    url = f"{scheme}://{host}{urllib.parse.quote(path)}?{canonical_query(query)}"
    headers = sign("GET", host, path, query, region, credentials) if credentials else {}
    request = urllib.request.Request(url, headers=headers, method="GET")
    context = ssl.create_default_context()
    if skip_verify:  # the replica URL's skip-verify=true, as Litestream honours it
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    opener = urllib.request.build_opener(NoRedirects, urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(request, timeout=timeout) as response:
            response.read(65536)
            return {"status": response.status, "reason": "OK", "url": url, "region": None}
    except urllib.error.HTTPError as error:
        with error:
            body = error.read(65536)
        return {"status": error.code, "reason": s3_error(error.code, body), "url": url,
                "region": error.headers.get("x-amz-bucket-region")}
    except (TimeoutError, OSError, urllib.error.URLError) as error:
        reason = getattr(error, "reason", error)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return {"error": f"the S3 store at {shown(url)} did not answer within {timeout} s"}
        words = getattr(reason, "strerror", None) or str(reason)
        return {"error": f"cannot reach the S3 store at {shown(url)}: {printable(words)}"}


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """A signed request is never sent on elsewhere: a redirect is the store's answer (another region, say)."""

    def redirect_request(self, *args, **kwargs):
        return None


def s3_error(status, body):
    """The S3 error's code and message (never the rest: SignatureDoesNotMatch's answer repeats what was signed)."""
    text = body.decode("utf-8", "replace")
    code = re.search(r"<Code>([^<]{1,100})</Code>", text)
    message = re.search(r"<Message>([^<]{1,300})</Message>", text)
    words = ": ".join(part.group(1) for part in (code, message) if part)
    return printable(f"{words}" if words else {403: "Forbidden", 404: "Not Found"}.get(status, "(no S3 error)"))


def printable(text):
    return "".join(char if char.isprintable() else " " for char in str(text)).strip()


# --- AWS Signature Version 4 ------------------------------------------------------------------------------


def canonical_query(query):
    return "&".join(f"{quote(name)}={quote(value)}" for name, value in sorted(query.items()))


def quote(text):
    return urllib.parse.quote(text, safe="-_.~")


def sign(method, host, path, query, region, credentials, now=None):
    """The headers of a request signed with AWS Signature Version 4 (service s3, no body)."""
    key, secret, token = credentials
    moment = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    day = moment[:8]
    headers = {"host": host, "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": moment}
    if token:
        headers["x-amz-security-token"] = token
    names = ";".join(sorted(headers))
    request = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), canonical_query(query),
                         *(f"{name}:{headers[name].strip()}" for name in sorted(headers)), "", names, EMPTY_SHA256])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", moment, scope, hashlib.sha256(request.encode()).hexdigest()])
    signing_key = f"AWS4{secret}".encode()
    for part in (day, region, "s3", "aws4_request"):
        signing_key = hmac.new(signing_key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={key}/{scope}, SignedHeaders={names}, "
                                f"Signature={signature}")
    del headers["host"]  # urllib sends it, as signed
    return headers
