"""Celery entry point for redrive policies: a thin wrapper over dlq/redrive/scheduler.py."""

from celery import shared_task

from dlq.redrive import scheduler
from dlq.tasks.alerts import send_alert


@shared_task(name="dlq.tasks.redrive_tick", ignore_result=True)
def redrive_tick() -> int:
    """Beat, every few seconds: match arrivals, trip (a trip alerts), replay what is due."""
    attempt_ids = scheduler.tick()
    for attempt_id in attempt_ids:
        send_alert.delay(attempt_id)
    return len(attempt_ids)
