"""Left for okr/web/sessions.py alone, until it imports switch from okr/settings.py, where on/off settings are
parsed now; then this module goes."""
from .settings import switch  # noqa: F401
