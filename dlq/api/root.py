"""The HTTP API under /api/v1/ (contract: HTTP API): the API object, its error answers, and
the routers of each resource beside this module; the work is done in the domain packages
(dlq/messages/ for reading, dlq/actions/ for acting)."""

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from dlq.accounts.roles import VIEWER
from dlq.actions.errors import ActionError
from dlq.api.alerts import router as alerts_router
from dlq.api.audit import router as audit_router
from dlq.api.auth import docs_access
from dlq.api.base import needs
from dlq.api.groups import router as groups_router
from dlq.api.jobs import router as jobs_router
from dlq.api.messages import router as messages_router
from dlq.api.overrides import router as overrides_router
from dlq.api.policies import router as policies_router
from dlq.api.queues import router as queues_router
from dlq.api.tokens import router as tokens_router
from dlq.http import REQUEST_ID_HEADER, request_id
from dlq.schemas.errors import field_errors

__all__ = ["api"]


class ConsoleAPI(NinjaAPI):
    """Every JSON answer, errors included, echoes the request id."""

    def create_response(self, request, data, *, status=None, temporal_response=None):
        response = super().create_response(
            request, data, status=status, temporal_response=temporal_response
        )
        response[REQUEST_ID_HEADER] = request_id(request)
        return response


api = ConsoleAPI(
    title="DLQ Console API",
    version="1",
    description=(
        "RabbitMQ dead-letter queues: stored messages, queues, actions, bulk jobs, audit.\n\n"
        "Authentication: `Authorization: Bearer TOKEN` (`manage.py dlq_token USERNAME`) or the "
        "browser session (requests that change state need the CSRF token). Roles: viewer "
        "reads; operator also edits, replays, discards, restores and runs jobs.\n\n"
        "Every response carries `X-Request-ID`: the one the request sent (letters, digits and "
        "`._:-`, at most 64 characters) or a new one; audit rows keep it."
    ),
    auth=needs(VIEWER),
    docs_decorator=docs_access,
    urls_namespace="api",
)


@api.exception_handler(ValidationError)
def invalid_input(request, exc):
    body = {"detail": "invalid input", "errors": field_errors(exc.errors)}
    return api.create_response(request, body, status=400)


@api.exception_handler(HttpError)
def http_error(request, exc):
    """ninja's own refusals (a body that is not JSON: 400; CSRF: 403) in the API's shapes."""
    body = {"detail": exc.message}
    if exc.status_code == 400:
        body = {"detail": "invalid input", "errors": {"__all__": [exc.message]}}
    return api.create_response(request, body, status=exc.status_code)


@api.exception_handler(RequestDataTooBig)
def too_big(request, exc):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    errors = {"__all__": [f"the request body is larger than {limit} bytes"]}
    return api.create_response(request, {"detail": "invalid input", "errors": errors}, status=400)


@api.exception_handler(ActionError)
def action_refused(request, exc):
    """400 field by field (like invalid input), 404 and 409 with a detail."""
    if exc.status == 400:
        errors = {"__all__" if k == "detail" else k: v for k, v in exc.errors.items()}
        return api.create_response(
            request, {"detail": "invalid input", "errors": errors}, status=400
        )
    detail = " ".join(message for messages in exc.errors.values() for message in messages)
    return api.create_response(request, {"detail": detail}, status=exc.status)


@api.exception_handler(AuthenticationError)
def unauthenticated(request, exc):
    body = {"detail": "authentication required: send Authorization: Bearer TOKEN, or log in"}
    response = api.create_response(request, body, status=401)
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(PermissionDenied)
def forbidden(request, exc):
    return api.create_response(request, {"detail": str(exc) or "forbidden"}, status=403)


@api.exception_handler(Http404)
def not_found(request, exc):
    return api.create_response(request, {"detail": str(exc) or "not found"}, status=404)


api.add_router("/queues", queues_router, tags=["queues"])
api.add_router("/messages", messages_router, tags=["messages"])
api.add_router("/groups", groups_router, tags=["groups"])
api.add_router("/jobs", jobs_router, tags=["jobs"])
api.add_router("/audit", audit_router, tags=["audit"])
api.add_router("/alerts", alerts_router, tags=["alerts"])
api.add_router("/tokens", tokens_router, tags=["tokens"])
api.add_router("/replay-targets", overrides_router, tags=["replay overrides"])
api.add_router("/policies", policies_router, tags=["redrive policies"])
