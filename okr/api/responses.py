"""Response helpers shared by the blueprints."""
from flask import current_app


def deleted():
    """200 with an empty body, as the spec gives for DELETE."""
    response = current_app.response_class(status=200)
    del response.headers["Content-Type"]
    return response
