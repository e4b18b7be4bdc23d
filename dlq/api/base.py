"""What every router of the API shares: authenticators per role and the error responses."""

from dlq.api.auth import BearerAuth, SessionAuth
from dlq.schemas.errors import ErrorOut, InvalidInput

ERRORS = {400: InvalidInput, 401: ErrorOut, 403: ErrorOut}
# An action on one object: it may not exist, or its status may not allow the action.
ACTION_ERRORS = {**ERRORS, 404: ErrorOut, 409: ErrorOut}


def needs(role: str) -> list:
    """Authenticators for an endpoint open to `role` and above: a token or the session."""
    return [BearerAuth(role), SessionAuth(role)]
