"""Retention: replayed and discarded messages go after their time, parked ones never."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dlq.actions import message as message_actions
from dlq.messages import retention
from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Replay
from tests.factories import make_message, make_messages
from tests.topology import Topology

pytestmark = pytest.mark.django_db(transaction=True)
OLD = timezone.now() - timedelta(days=400)


def days_later(days: int):
    return timezone.now() + timedelta(days=days)


def remaining(messages) -> set[int]:
    return set(Message.objects.filter(pk__in=[m.pk for m in messages]).values_list("pk", flat=True))


def test_it_purges_settled_messages_after_the_retention_and_never_parked_ones(
    channel, cleanup_queues, unique
):
    top = Topology(channel, cleanup_queues, unique)
    work = top.queue("work")
    parked = make_message(queue=top.name("dlq"), received_at=OLD)
    discarded = make_message(queue=top.name("dlq"), received_at=OLD)
    message_actions.discard(discarded.pk, "ops", "noise")
    replayed = make_message(queue=top.name("dlq"), exchange="", routing_key=work, died_in=work)
    assert (
        message_actions.replay_one(replayed.pk, "failed_queue", "ops", "fixed").outcome
        == "confirmed"
    )
    restored = make_message(queue=top.name("dlq"), received_at=OLD)
    message_actions.discard(restored.pk, "ops", "oops")
    message_actions.restore(restored.pk, "ops", "not noise after all")
    everything = [parked, discarded, replayed, restored]

    # Days count from the discard, not from the arrival 400 days ago.
    assert retention.purge_messages(now=days_later(settings.DLQ_RETENTION_DAYS - 1)) == 0
    assert remaining(everything) == {m.pk for m in everything}

    assert retention.purge_messages(now=days_later(settings.DLQ_RETENTION_DAYS + 1)) == 2
    assert remaining(everything) == {parked.pk, restored.pk}
    assert Message.objects.get(pk=restored.pk).status == Status.PARKED
    assert not Replay.objects.filter(message_id=replayed.pk).exists()
    # The audit trail of the purged messages stays.
    assert AuditEntry.objects.filter(message_ids_json=f"[{discarded.pk}]").exists()


def test_it_purges_in_batches(unique):
    messages = make_messages(5, queue=f"{unique}.dlq")
    Message.objects.filter(pk__in=[m.pk for m in messages]).update(status=Status.DISCARDED)
    with CaptureQueriesContext(connection) as queries:
        assert retention.purge_messages(now=days_later(31), batch=2) == 5
    deletes = [q["sql"] for q in queries if q["sql"].startswith('DELETE FROM "dlq_message"')]
    assert len(deletes) == 3  # 2 + 2 + 1, each batch its own transaction
    assert not remaining(messages)


def test_zero_days_keeps_everything(unique):
    message = make_message(queue=f"{unique}.dlq")
    message_actions.discard(message.pk, "ops", "noise")
    assert retention.purge_messages(now=days_later(10_000), days=0) == 0
    assert remaining([message]) == {message.pk}


def test_audit_rows_are_kept_unless_their_own_retention_is_set(unique):
    message = make_message(queue=f"{unique}.dlq")
    message_actions.discard(message.pk, "ops", "noise")
    entry = AuditEntry.objects.get(message_ids_json=f"[{message.pk}]")
    assert retention.purge_audit(now=days_later(10_000)) == 0  # default: kept forever
    # A row written 100 days ago: rows are append-only, so it is made old at insert.
    old = AuditEntry.objects.create(at=days_later(-100), actor_name="ops", action="discard")

    assert retention.purge_audit(days=90) == 1
    assert not AuditEntry.objects.filter(pk=old.pk).exists()
    assert AuditEntry.objects.filter(pk=entry.pk).exists()  # younger than 90 days
    # The append-only guard is back for everyone else.
    message_actions.restore(message.pk, "ops", "back")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.all().delete()


def test_beat_runs_the_purge_hourly():
    from console.celery import app
    from dlq.tasks import health

    entry = settings.CELERY_BEAT_SCHEDULE["purge-retention"]
    assert entry["task"] == health.purge_retention.name
    assert entry["schedule"] == 3600.0
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
    assert health.purge_retention() == {"messages": 0, "audit": 0}


def test_the_trigger_records_when_a_message_became_replayed_or_discarded_and_nothing_else(unique):
    """Retention reads only those (a recorded status that no longer matches is never
    purged); a bulk replay's claim (`replaying`) and a failed replay (`parked`) write nothing."""
    from dlq.models import StatusChange

    message = make_message(queue=f"{unique}.dlq")

    def recorded():
        return StatusChange.objects.filter(message=message).values_list("status", flat=True).first()

    Message.objects.filter(pk=message.pk).update(status=Status.REPLAYING)
    Message.objects.filter(pk=message.pk).update(status=Status.PARKED)
    assert recorded() is None
    Message.objects.filter(pk=message.pk).update(status=Status.DISCARDED)
    assert recorded() == Status.DISCARDED
    Message.objects.filter(pk=message.pk).update(status=Status.PARKED)  # restored
    assert recorded() == Status.DISCARDED  # no longer matches: never purged while parked
    assert retention.purge_messages(days_later(1000), days=1) == 0
    Message.objects.filter(pk=message.pk).update(status=Status.REPLAYING)
    Message.objects.filter(pk=message.pk).update(status=Status.REPLAYED)
    assert recorded() == Status.REPLAYED
    assert retention.purge_messages(days_later(1000), days=1) == 1
