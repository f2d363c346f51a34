"""GET /healthz, open without auth, for process supervisors."""
from flask import Blueprint

from .. import db

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def check_health():
    """Tells a process supervisor whether the database file is there and answers."""
    db.check_database()
    return {"status": "ok"}
