"""Celery entry points for alerts and the search index: thin wrappers over dlq/alerts.py,
dlq/delivery.py and dlq/searchindex.py."""

from celery import shared_task
from django.db import DatabaseError

from dlq import alerts, delivery, searchindex


@shared_task(ignore_result=True)
def evaluate_alerts() -> int:
    """Beat, every few seconds: count new arrivals, queue due alerts, resend lost ones."""
    attempt_ids = alerts.evaluate() + delivery.overdue()
    for attempt_id in attempt_ids:
        send_alert.delay(attempt_id)
    return len(attempt_ids)


@shared_task(
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


@shared_task(ignore_result=True)
def index_search() -> int:
    """Beat, every few seconds: copy new messages into the search index."""
    return searchindex.run_pass()
