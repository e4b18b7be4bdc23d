"""Slack's interactivity Request URL: `POST /integrations/slack/interactions`.

Only the signature authenticates (no session, no CSRF token: Slack holds neither), so it is
checked before anything else is read, over at most MAX_BODY bytes of the raw body. Slack
wants an answer within 3 s: the press is done here (a few queries), and what Slack shows
afterwards is posted to the payload's `response_url` by a Celery task. Every outcome is a
short plain answer in our words; a refused request is logged as a note of our own, never
with anything the sender chose."""

import logging

from django.conf import settings
from django.db import transaction
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from dlq.alerts.slack import interactions
from dlq.tasks import alerts as alert_tasks
from dlq.tasks import jobs as job_tasks

log = logging.getLogger("dlq.slack")

MAX_BODY = 64 * 1024


def _plain(status: int, note: str = "") -> HttpResponse:
    return HttpResponse(f"{note}\n" if note else b"", status=status, content_type="text/plain")


@csrf_exempt
@require_POST
@never_cache
def interactions_view(request):
    secret = settings.DLQ_SLACK_SIGNING_SECRET
    if not secret:
        return _plain(404, "Slack interactions are off: DLQ_SLACK_SIGNING_SECRET is not set")
    body = _body(request)
    if body is None:
        return _plain(413, "the request is larger than 64 KiB")
    try:
        interactions.verify(secret, request.headers.get("X-Slack-Request-Timestamp"),
                            request.headers.get("X-Slack-Signature"), body)  # fmt: skip
        press = interactions.parse(body)
    except interactions.Refused as e:
        log.warning("slack interaction refused", extra={"status": e.status, "why": str(e)})
        return _plain(e.status, str(e))
    try:
        reply = interactions.handle(press)
    except Exception:  # a bug or a lost database: Slack sees no 500, the log says what
        log.exception("slack interaction failed")
        reply = interactions.Reply(interactions.ephemeral("The console failed to do this."))
    _hand_over(press.response_url, reply)
    return _plain(200)


def _body(request) -> bytes | None:
    """The raw body, at most MAX_BODY bytes (None when it is larger)."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > MAX_BODY:
        return None
    body = request.read(MAX_BODY + 1)
    return body if len(body) <= MAX_BODY else None


def _hand_over(response_url: str, reply: interactions.Reply) -> None:
    """The job to the workers and the answer to the response URL, once committed. The
    broker being away loses the answer, not the press: beat resumes a job never started."""
    job, message = reply.job, reply.message
    if job is not None:
        _after_commit(lambda: job_tasks.start(job), "the canary job")
    if message is not None:
        _after_commit(lambda: alert_tasks.respond(response_url, message), "the answer")


def _after_commit(hand, what: str) -> None:
    try:
        transaction.on_commit(hand)
    except Exception:  # outside a transaction it runs now: a broker away raises here
        log.exception(f"slack interaction: the worker queue did not take {what}")
