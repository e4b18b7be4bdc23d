"""Telegram's webhook (DLQ_TELEGRAM_UPDATES=webhook): POST /integrations/telegram/webhook.

Telegram signs nothing: a request counts only with the secret token the webhook was set
with (setWebhook's secret_token, DLQ_TELEGRAM_WEBHOOK_SECRET) in
X-Telegram-Bot-Api-Secret-Token, compared in constant time; else 401 and nothing is done.
No session and no CSRF token: the secret is the credential. One update per request,
handled (and answered) by dlq/alerts/telegram/updates.py; 200 once it is taken, whatever
it said, so Telegram does not send it again."""

import hmac
import json

from django.conf import settings
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from dlq.alerts.telegram import updates
from dlq.tasks import jobs as job_tasks

MAX_BODY = 64 * 1024
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def _refused(status: int, error: str) -> JsonResponse:
    return JsonResponse({"error": error}, status=status)


def _signed(request) -> bool:
    expected = settings.DLQ_TELEGRAM_WEBHOOK_SECRET.encode()
    given = request.headers.get(SECRET_HEADER, "").encode()
    return bool(expected) and hmac.compare_digest(given, expected)


@csrf_exempt
@require_POST
def webhook(request):
    if settings.DLQ_TELEGRAM_UPDATES != "webhook":
        raise Http404("Telegram updates do not come by webhook to this console")
    if not _signed(request):
        return _refused(401, "the secret token is missing or wrong")
    try:
        declared = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        return _refused(400, "Content-Length is not a number")
    if declared > MAX_BODY or len(body := request.read(MAX_BODY + 1)) > MAX_BODY:
        return _refused(413, f"an update is at most {MAX_BODY} bytes")
    try:
        update = json.loads(body)
    except (ValueError, RecursionError):
        return _refused(400, "the body is not JSON")
    if not isinstance(update, dict):
        return _refused(400, "the body is not a JSON object")
    updates.handle(update, start_job=job_tasks.start)
    return JsonResponse({"ok": True})
