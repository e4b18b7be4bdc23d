"""Celery entry points for alerts: thin wrappers over dlq/alerts/engine.py and delivery.py.

Task names are pinned to the names they had before the package moved (dlq.tasks.*)."""

from celery import shared_task
from django.db import DatabaseError

from dlq.alerts import delivery, engine


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
