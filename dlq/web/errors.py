"""The error pages (403, 404, 500): styled like the console, with its navigation and the
request id an operator quotes when asking for help. A 404 for a message that is gone (purged
by retention, or linked from an old alert) says so and points to what the audit trail keeps."""

import logging
import sys

from django.http import HttpResponse, HttpResponseServerError
from django.template import loader

from dlq.http import REQUEST_ID_HEADER, request_id

log = logging.getLogger(__name__)

# What a 500 shows when even the styled page cannot be rendered (the database is down, a
# template is broken): plain, with the request id all the same.
BARE_500 = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Server error · DLQ Console</title></head><body><h1>Server error</h1>
<p>The console failed to answer this request. Request id: <code>{rid}</code></p>
<p><a href="/">Back to the overview</a></p></body></html>"""


def _page(request, template: str, status: int, **context) -> HttpResponse:
    rid = request_id(request)
    body = loader.render_to_string(template, {"request_id": rid, **context}, request)
    response = HttpResponse(body, status=status)
    response[REQUEST_ID_HEADER] = rid
    return response


def _gone_message(request) -> int | None:
    """The message id when the 404 is the message page's own (the URL resolved, the
    message does not exist)."""
    match = getattr(request, "resolver_match", None)
    if match is None or match.namespace != "messages" or "pk" not in match.kwargs:
        return None
    return match.kwargs["pk"]


def not_found(request, exception=None):
    return _page(request, "errors/404.html", 404, message_id=_gone_message(request),
                 path=request.path)  # fmt: skip


def permission_denied(request, exception=None):
    reason = str(exception) if exception is not None and str(exception) else ""
    return _page(request, "403.html", 403, exception=reason)


def server_error(request):
    # Django logs the traceback next ("Internal Server Error: PATH"); this line ties it to
    # the id the page shows.
    failure = sys.exc_info()[1]
    log.error("server error", extra={"request_id": request_id(request), "path": request.path,
                                     "error": f"{type(failure).__name__}: {failure}"})  # fmt: skip
    try:
        return _page(request, "errors/500.html", 500)
    except Exception:  # the page itself failed: answer plainly rather than not at all
        log.exception("the 500 page failed")
        rid = request_id(request)
        response = HttpResponseServerError(BARE_500.format(rid=rid))
        response[REQUEST_ID_HEADER] = rid
        return response
