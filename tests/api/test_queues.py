import time
from datetime import UTC, datetime

import pytest

from dlq.drain import store
from dlq.models import Message
from tests.conftest import publish
from tests.factories import client_for, make_message, make_messages, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return client_for(make_user("viewer"), token=True)


def queues(client) -> dict[str, dict]:
    response = client.get("/api/v1/queues")
    assert response.status_code == 200
    return {q["name"]: q for q in response.json()["results"]}


def wait_for_depth(client, name: str, depth: int) -> dict:
    """The management API refreshes queue stats every few seconds."""
    deadline = time.monotonic() + 30
    while True:
        row = queues(client)[name]
        if row["depth"] == depth or time.monotonic() > deadline:
            return row
        time.sleep(0.5)


def test_it_lists_queues_with_parked_count_and_broker_depth(client, channel, top):
    name = top.queue("dlq")
    for n in range(3):
        publish(channel, "", name, f"waiting {n}".encode())
    at = datetime(2025, 5, 1, 12, tzinfo=UTC)
    stored = make_messages(4, queue=name, received_at=at)
    Message.objects.filter(pk=stored[0].pk).update(status="discarded")

    row = wait_for_depth(client, name, 3)
    assert row["depth"] == 3
    assert row["vhost"] == "/"
    assert row["parked"] == 3
    assert row["last_arrival_at"] is not None


def test_it_lists_a_matched_queue_before_anything_arrived(client):
    store.note_queues("/", [{"name": "quiet.dlq", "type": "quorum"}])
    row = queues(client)["quiet.dlq"]
    assert row == {
        "name": "quiet.dlq",
        "vhost": "/",
        "queue_type": "quorum",
        "parked": 0,
        "depth": None,  # not on the broker
        "last_arrival_at": None,
    }


def test_it_gives_no_depth_when_the_management_api_is_unreachable(client, settings):
    make_message(queue="orders.dlq")
    settings.DLQ_MANAGEMENT_URL = "http://guest:guest@127.0.0.1:9"
    row = queues(client)["orders.dlq"]
    assert row["depth"] is None
    assert row["parked"] == 1


def test_it_lists_a_queue_that_has_stored_messages_only(client):
    message = make_message(queue="legacy.dlq")
    from dlq.models import DrainedQueue

    DrainedQueue.objects.filter(name="legacy.dlq").delete()
    row = queues(client)["legacy.dlq"]
    assert row["parked"] == 1
    assert row["last_arrival_at"] is not None
    assert message.queue == row["name"]
