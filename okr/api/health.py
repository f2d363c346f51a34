"""GET /healthz, open without auth, for process supervisors."""
from flask import Blueprint, current_app

from .. import db
from ..server import litestream
from .errors import error_response

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def check_health():
    """Tells a process supervisor whether the database file is there and answers, and, when the server
    replicates, whether the replica keeps up."""
    db.check_database()
    status_path = current_app.config.get("REPLICATION_STATUS")
    if not status_path:
        return {"status": "ok"}
    # A fixed word and the lag only: this answer needs no credentials (okr/server/litestream.py's health says why).
    healthy, details = litestream.health(litestream.read_status(status_path), current_app.config["REPLICATE_MAX_LAG"])
    if not healthy:
        return error_response(503, "replication is failing", details)
    # Failing, but the replica not yet behind for longer than --replicate-max-lag: serving goes on.
    return {"status": "ok" if details["replication"] == "ok" else "degraded", "details": details}
