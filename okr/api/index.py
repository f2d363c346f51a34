"""GET /: a small JSON index of the service, open without auth (a dashboard will replace it)."""
import importlib.metadata
from functools import cache

from flask import Blueprint

bp = Blueprint("index", __name__)

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


@bp.get("/")
def show_index():
    """Names the service and its version, and links to its description and health check."""
    return {"name": PACKAGE, "version": package_version(), "links": LINKS}
