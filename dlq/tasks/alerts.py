"""Celery entry points for alerts: thin wrappers over dlq/alerts/engine.py and delivery.py,
and for alerts you can act on: Telegram's getUpdates poll, the lifecycle pass.

Task names are pinned to the names they had before the package moved (dlq.tasks.*)."""

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError

from dlq.alerts import chat, delivery, engine, lifecycle
from dlq.alerts.slack import responses
from dlq.alerts.telegram import edits, polling
from dlq.tasks import jobs as job_tasks


@shared_task(name="dlq.tasks.evaluate_alerts", ignore_result=True)
def evaluate_alerts() -> int:
    """Beat, every few seconds: count new arrivals, queue due alerts, resend lost ones."""
    attempt_ids = engine.evaluate() + delivery.overdue()
    for attempt_id in attempt_ids:
        send_alert.delay(attempt_id)
    return len(attempt_ids)


@shared_task(
    name="dlq.tasks.send_alert",
    ignore_result=True,
    autoretry_for=(DatabaseError,),
    retry_backoff=True,
    max_retries=5,
)
def send_alert(attempt_id: int) -> str | None:
    """One try; a transient failure queues the next (bounded, after Retry-After)."""
    following = delivery.deliver_attempt(attempt_id)
    if following is not None:
        send_alert.apply_async((following.id,), eta=following.not_before)
    return None


@shared_task(name="dlq.tasks.telegram_poll", ignore_result=True)
def telegram_poll() -> int:
    """Beat, every few seconds: presses and /start messages from each bot's getUpdates.
    Nothing at all without a Telegram channel, or when updates come otherwise (webhook, off)."""
    if settings.DLQ_TELEGRAM_UPDATES != "poll":
        return 0
    return polling.poll_all(start_job=job_tasks.start)


@shared_task(name="dlq.tasks.alert_lifecycle", ignore_result=True)
def alert_lifecycle() -> int:
    """Beat: forget resolved groups (their next arrival alerts as new), edit Telegram alerts
    whose groups' states changed, and drop chat deliveries past their day."""
    forgotten = lifecycle.forget_resolved()
    edits.edit_stale()
    chat.forget_deliveries()
    return forgotten


@shared_task(name="dlq.tasks.slack_respond", ignore_result=True)
def slack_respond(response_url: str, message: dict, try_no: int = 1) -> None:
    """Answer a Slack press through its response URL, tried again later as an alert is
    when Slack fails (the log says why each time)."""
    wait = responses.post(response_url, message, try_no)
    if wait is not None:
        slack_respond.apply_async((response_url, message, try_no + 1), countdown=wait)


def respond(response_url: str, message: dict) -> None:
    """Queue the answer to a Slack press (called after the press commits)."""
    slack_respond.delay(response_url, message)
