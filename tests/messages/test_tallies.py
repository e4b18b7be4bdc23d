"""The queues' counts kept by the database (dlq/messages/tallies.py): after every way a
message is written, the tallies say what counting the messages says."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction

from dlq.actions import message as actions
from dlq.messages import retention, tallies
from dlq.models import Message, QueueTally, Status
from tests.factories import make_message, make_messages, make_user

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="tallies are kept by PostgreSQL triggers; other databases count at read time",
)


def counted(vhost: str) -> dict:
    return tallies._counted(vhost)


def tallied(vhost: str) -> dict:
    return tallies.per_queue(vhost)


@pytest.mark.django_db
def test_every_way_of_writing_a_message_is_tallied(unique):
    vhost = f"/{unique}"
    admin = make_user("admin")
    first = make_messages(5, queue="a.dlq", vhost=vhost)  # the drainer's COPY
    make_messages(3, queue="b.dlq", vhost=vhost)
    make_messages(2, queue="a.dlq", vhost=f"{vhost}-other")
    assert tallied(vhost) == counted(vhost)
    assert tallied(vhost)[(vhost, "a.dlq")]["parked"] == 5

    actions.discard(first[0].pk, admin, "bad order")
    actions.discard(first[1].pk, admin, "bad order")
    actions.restore(first[1].pk, admin, "was fine")
    Message.objects.filter(pk=first[2].pk).update(status=Status.REPLAYED)
    actions.edit(first[3].pk, admin, "fix", body_text='{"order": 2}')  # an update, same counts
    assert tallied(vhost)[(vhost, "a.dlq")] == {
        "stored": 5, "parked": 3, "last": counted(vhost)[(vhost, "a.dlq")]["last"]
    }  # fmt: skip
    assert tallied(vhost) == counted(vhost)

    retention.purge_messages(now=datetime.now(UTC) + timedelta(days=3), days=1)
    assert tallied(vhost)[(vhost, "a.dlq")]["stored"] == 3
    assert tallied(vhost) == counted(vhost)

    Message.objects.filter(vhost=vhost, queue="b.dlq").delete()
    assert (vhost, "b.dlq") not in tallied(vhost)
    assert tallied(f"{vhost}-other") == counted(f"{vhost}-other")


@pytest.mark.django_db
def test_a_rolled_back_write_leaves_the_counts_alone(unique):
    vhost = f"/{unique}"
    make_messages(2, queue="a.dlq", vhost=vhost)
    with pytest.raises(RuntimeError), transaction.atomic():
        make_messages(4, queue="a.dlq", vhost=vhost)
        Message.objects.filter(vhost=vhost).update(status=Status.DISCARDED)
        raise RuntimeError("the batch failed")
    assert tallied(vhost)[(vhost, "a.dlq")]["stored"] == 2
    assert tallied(vhost)[(vhost, "a.dlq")]["parked"] == 2


@pytest.mark.django_db
def test_folding_keeps_the_sums_and_leaves_one_row_per_queue(unique):
    vhost = f"/{unique}"
    for _ in range(4):
        make_messages(2, queue="a.dlq", vhost=vhost)
    late = make_message(queue="a.dlq", vhost=vhost, received_at=datetime(2098, 1, 1, tzinfo=UTC))
    Message.objects.filter(pk=late.pk).update(status=Status.DISCARDED)
    make_messages(1, queue="gone.dlq", vhost=vhost)
    Message.objects.filter(vhost=vhost, queue="gone.dlq").delete()
    before = tallied(vhost)
    assert QueueTally.objects.filter(vhost=vhost).count() > 2

    tallies.fold()

    assert tallied(vhost) == before == counted(vhost)
    assert before[(vhost, "a.dlq")] == {
        "stored": 9, "parked": 8, "last": datetime(2098, 1, 1, tzinfo=UTC)
    }  # fmt: skip
    rows = QueueTally.objects.filter(vhost=vhost)
    assert list(rows.values_list("queue", flat=True)) == ["a.dlq"]  # gone.dlq holds nothing


@pytest.mark.django_db(transaction=True)
def test_writes_during_a_fold_are_neither_lost_nor_counted_twice(unique):
    """Writers commit batches while folds run in another connection."""
    vhost = f"/{unique}"
    stop, errors = threading.Event(), []

    def folding():
        try:
            while not stop.is_set():
                tallies.fold()
        except Exception as e:  # the assertion below names it
            errors.append(e)
        finally:
            connection.close()

    folder = threading.Thread(target=folding)
    folder.start()
    try:
        for i in range(30):
            made = make_messages(3, queue=f"q{i % 3}.dlq", vhost=vhost)
            Message.objects.filter(pk=made[0].pk).update(status=Status.DISCARDED)
    finally:
        stop.set()
        folder.join()
    assert not errors
    assert tallied(vhost) == counted(vhost)
    assert sum(q["stored"] for q in tallied(vhost).values()) == 90
    assert sum(q["parked"] for q in tallied(vhost).values()) == 60
