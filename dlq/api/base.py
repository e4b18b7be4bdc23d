"""What every router of the API shares: authenticators per role, error responses, request ids."""

import re
import uuid

from dlq.api.auth import BearerAuth, SessionAuth
from dlq.schemas.errors import ErrorOut, InvalidInput

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_MAX = 64
_NOT_IN_REQUEST_ID = re.compile(r"[^A-Za-z0-9._:-]")

ERRORS = {400: InvalidInput, 401: ErrorOut, 403: ErrorOut}
# An action on one object: it may not exist, or its status may not allow the action.
ACTION_ERRORS = {**ERRORS, 404: ErrorOut, 409: ErrorOut}


def needs(role: str) -> list:
    """Authenticators for an endpoint open to `role` and above: a token or the session."""
    return [BearerAuth(role), SessionAuth(role)]


def request_id(request) -> str:
    """The request's id: the caller's X-Request-ID (only [A-Za-z0-9._:-], at most 64
    characters) or a new one. Audit rows carry it and every API response echoes it."""
    known = getattr(request, "dlq_request_id", None)
    if known is None:
        given = _NOT_IN_REQUEST_ID.sub("", request.headers.get(REQUEST_ID_HEADER, ""))
        known = given[:REQUEST_ID_MAX] or uuid.uuid4().hex
        request.dlq_request_id = known
    return known
