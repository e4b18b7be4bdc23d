"""With node 1 of the cluster down from the start, or hung, every user of the broker works
through node 2: a single replay, the readiness probe, the management API's queue discovery
and the drainer that relies on it. A dead node is a loopback port where nothing listens;
a hung one is a stopped proxy (tests/nodeproxy.py) that takes connections and says nothing.
"""

import time

import pytest
from django.test import Client

from dlq.actions import message as message_actions
from dlq.broker import mgmt
from dlq.models import Status
from tests.conftest import drain_once, publish
from tests.factories import make_message
from tests.nodeproxy import dead_node
from tests.topology import get, stored

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def node1_dead(rabbit, settings):
    """DLQ_BROKER_URL and DLQ_MANAGEMENT_URL name a dead node 1, then the broker itself."""
    settings.DLQ_BROKER_URL = f"{dead_node(rabbit.url)},{rabbit.url}"
    settings.DLQ_MANAGEMENT_URL = f"{dead_node(rabbit.management)},{rabbit.management}"


def test_a_single_replay_goes_through_node_2(node1_dead, channel, top):
    work = top.queue("work")
    message = make_message(queue=top.name("dlq"), died_in=work, body=b'{"order": 7}')

    result = message_actions.replay_one(message.pk, "failed_queue", "frank", "node 1 is down")

    assert (result.outcome, result.detail) == ("confirmed", "")
    _, _, body = get(channel, work)
    assert body == b'{"order": 7}'
    message.refresh_from_db()
    assert (message.status, message.replay_count) == (Status.REPLAYED, 1)


def test_the_console_is_ready_through_node_2(node1_dead):
    response = Client().get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"] == {"database": "ok", "broker": "ok"}


def test_it_is_not_ready_when_no_node_answers(rabbit, settings):
    settings.DLQ_BROKER_URL = f"{dead_node(rabbit.url)},{dead_node(rabbit.url)}"
    response = Client().get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"] == "unreachable"


def test_queue_discovery_and_a_drain_go_through_node_2(node1_dead, channel, top):
    parking = top.queue("dlq")
    publish(channel, "", parking, b"parked while node 1 was down")

    assert parking in {q["name"] for q in mgmt.list_queues("/")}
    # A glob is resolved by the management API only: no discovery, nothing drained.
    drain_once([f"{top.prefix}.d*"])
    [row] = stored(parking)
    assert bytes(row.body) == b"parked while node 1 was down"


def test_a_hung_node_1_costs_one_timeout_then_none(rabbit, settings, node1):
    # A hung node takes the TCP connection and never answers: each request that began
    # with it would wait for a timeout. The node that answered is where the next begins.
    node1.freeze()
    for name, value in node1.cluster().items():
        setattr(settings, name, value)

    for check in (_ready, _queues_listed):
        started = time.monotonic()
        assert check()
        first = time.monotonic() - started
        started = time.monotonic()
        assert check()
        again = time.monotonic() - started
        assert first >= 2 and again < 1, (check.__name__, first, again)


def _ready() -> bool:
    response = Client().get("/readyz")
    return response.status_code == 200 and response.json()["checks"]["broker"] == "ok"


def _queues_listed() -> bool:
    return isinstance(mgmt.list_queues("/"), list)
