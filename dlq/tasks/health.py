"""Celery entry points for the console's own health: thin wrappers over
dlq/health/drainers.py, dlq/messages/retention.py, dlq/messages/tallies.py and the group
tallies of dlq/groups/worklist.py."""

from celery import shared_task

from dlq.groups import worklist
from dlq.health import drainers
from dlq.messages import retention, tallies
from dlq.tasks.alerts import send_alert


@shared_task(name="dlq.health_tasks.check_drainers", ignore_result=True)
def check_drainers() -> int:
    """Beat: a drainer that stopped reporting alerts every enabled channel, once."""
    attempt_ids = drainers.alert_stale()
    for attempt_id in attempt_ids:
        send_alert.delay(attempt_id)
    return len(attempt_ids)


@shared_task(name="dlq.health_tasks.purge_retention", ignore_result=True)
def purge_retention() -> dict:
    """Beat, hourly: replayed and discarded messages past retention, in batches."""
    return retention.purge_all()


@shared_task(name="dlq.health_tasks.fold_tallies", ignore_result=True)
def fold_tallies() -> int:
    """Beat: the queues' and the groups' count rows summed into one per queue and per group
    and queue, so the overview and the groups' worklist read few."""
    return tallies.fold() + worklist.fold()
