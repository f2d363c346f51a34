"""The JSON index of the service, open without auth: GET / for API clients (browsers get the dashboard)."""
import importlib.metadata
from functools import cache


PACKAGE = "okr-service"
# What setup.cfg says, for a checkout run without installing the package.
CHECKOUT_VERSION = "0.1.0"
LINKS = {"openapi": "/v1/openapi.json", "healthz": "/healthz"}


@cache
def package_version():
    """The installed package's version, or CHECKOUT_VERSION when it is not installed."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return CHECKOUT_VERSION


def show_index():
    """Names the service and its version, and links to its description and health check."""
    return {"name": PACKAGE, "version": package_version(), "links": LINKS}
