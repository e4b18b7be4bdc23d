"""The queue overview's stored figures: exact parked counts and the last arrival of any status."""

from datetime import UTC, datetime

import pytest

from dlq.health import queues
from dlq.models import Message, Status
from tests.factories import make_message, make_messages

pytestmark = pytest.mark.django_db


def overview(vhost: str) -> dict[str, dict]:
    return {row["name"]: row for row in queues.queue_overview() if row["vhost"] == vhost}


def test_it_counts_parked_messages_per_queue_and_vhost_exactly(unique):
    vhost = f"/{unique}"  # no such vhost on the broker: only stored figures
    make_messages(4, queue="a.dlq", vhost=vhost)
    gone = make_messages(3, queue="a.dlq", vhost=vhost)
    make_messages(2, queue="b.dlq", vhost=vhost)
    make_messages(5, queue="a.dlq", vhost=f"{vhost}-other")
    Message.objects.filter(id__in=[m.id for m in gone[:2]]).update(status=Status.DISCARDED)
    Message.objects.filter(id=gone[2].id).update(status=Status.REPLAYED)
    rows = overview(vhost)
    assert {name: row["parked"] for name, row in rows.items()} == {"a.dlq": 4, "b.dlq": 2}
    assert overview(f"{vhost}-other")["a.dlq"]["parked"] == 5


def test_the_last_arrival_counts_messages_of_every_status(unique):
    """Arrival times in the future: later than the drained queue's own last_arrival_at."""
    vhost = f"/{unique}"
    make_message(queue="c.dlq", vhost=vhost, received_at=datetime(2098, 1, 1, tzinfo=UTC))
    late = make_message(queue="c.dlq", vhost=vhost, received_at=datetime(2098, 3, 1, tzinfo=UTC))
    make_message(queue="c.dlq", vhost=vhost, received_at=datetime(2098, 2, 1, tzinfo=UTC))
    Message.objects.filter(id=late.id).update(status=Status.DISCARDED)
    row = overview(vhost)["c.dlq"]
    assert row["parked"] == 2
    assert row["last_arrival_at"] == datetime(2098, 3, 1, tzinfo=UTC)


def test_a_queue_with_nothing_parked_is_listed_with_zero(unique):
    vhost = f"/{unique}"
    gone = make_message(queue="d.dlq", vhost=vhost)
    Message.objects.filter(id=gone.id).update(status=Status.REPLAYED)
    assert overview(vhost)["d.dlq"]["parked"] == 0
