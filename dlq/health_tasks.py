"""Celery entry points for operations: thin wrappers over heartbeat.py and retention.py."""

from celery import shared_task

from dlq import heartbeat, retention
from dlq.tasks import send_alert


@shared_task(ignore_result=True)
def check_drainers() -> int:
    """Beat: a drainer that stopped reporting alerts every enabled channel, once."""
    attempt_ids = heartbeat.alert_stale()
    for attempt_id in attempt_ids:
        send_alert.delay(attempt_id)
    return len(attempt_ids)


@shared_task(ignore_result=True)
def purge_retention() -> dict:
    """Beat, hourly: replayed and discarded messages past retention, in batches."""
    return retention.purge_all()
