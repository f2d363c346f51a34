"""The JSON index of the service, open without auth: GET / for API clients (browsers get the dashboard)."""
import importlib.metadata
from functools import cache


PACKAGE = "okr-service"
# What setup.cfg says, for a checkout run without installing the package.
CHECKOUT_VERSION = "0.1.0"
# Paths from the app's root; an app mounted under a prefix (/okr) puts it before each.
LINKS = {"openapi": "/v1/openapi.json", "healthz": "/healthz"}


@cache
def package_version():
    """The installed package's version, or CHECKOUT_VERSION when it is not installed."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return CHECKOUT_VERSION


def show_index(root=""):
    """Names the service and its version, and links to its description and health check.

    root is the path the app is mounted at ("" at the host's root): the links are
    paths on the host, so that a client can follow them as they are.
    """
    links = {name: root + path for name, path in LINKS.items()} if root else LINKS
    return {"name": PACKAGE, "version": package_version(), "links": links}
