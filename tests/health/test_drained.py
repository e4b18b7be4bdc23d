"""Drained queues that look like work queues (issue 26): `DLQ_QUEUES=orders.*` drains the
work queue and its retry queue too. Real queues on the real broker, a real drainer."""

import threading

import pika
import pytest

from dlq.broker import amqp
from dlq.drain.drainer import Drainer
from dlq.health import drained
from dlq.models import Message
from tests.conftest import publish
from tests.drainproc import wait_for
from tests.factories import make_message
from tests.topology import listed, reject

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def service(rabbit, cleanup_queues):
    """A service's own connection, named as services name theirs."""
    params = pika.URLParameters(rabbit.url)
    params.client_properties = {"connection_name": "orders-service"}
    conn = pika.BlockingConnection(params)
    yield conn.channel()
    conn.close()


@pytest.fixture
def draining(settings):
    """A real drainer of DLQ_QUEUES running in a thread while the test looks."""
    started = []

    def start() -> Drainer:
        drainer = Drainer()
        thread = threading.Thread(target=drainer.run, daemon=True)
        thread.start()
        started.append((drainer, thread))
        return drainer

    yield start
    for drainer, thread in started:
        drainer.stop()
        thread.join(timeout=30)


def suspects(unique: str) -> dict[str, list[str]]:
    return {s.queue: s.reasons for s in drained.check(["/"]) if s.queue.startswith(unique)}


def test_a_glob_over_a_service_s_queues_is_named_with_why(
    settings, channel, service, top, unique, draining
):
    settings.DLQ_QUEUES = [f"{unique}.orders*"]
    work = top.queue("orders")
    retry = top.queue(
        "orders.retry", **{"x-message-ttl": 5000, "x-dead-letter-exchange": "",
                           "x-dead-letter-routing-key": work}
    )  # fmt: skip
    park, dlx = top.parking("orders.dlq")
    events = top.queue("orders.events")
    source = top.queue("in", **{"x-dead-letter-exchange": dlx})
    service.basic_consume(work, lambda *a: None)  # the orders service works from its queue
    publish(channel, "", source, b"dead")
    reject(channel, source)  # dead-lettered into the parking queue: it has a death
    publish(channel, "", events, b"published straight in")  # no death

    draining()
    wait_for(lambda: Message.objects.filter(queue__in=[park, events]).count() == 2, 30,
             "the drainer to store both arrivals")  # fmt: skip
    found = wait_for(
        lambda: (s := suspects(unique)).get(work) and s, 30, "the management API to list consumers"
    )

    assert set(found) == {work, retry, events}  # not the parking queue, drained by the console
    [consumers] = found[work]
    assert "1 consumer besides the console's drainer (orders-service)" in consumers
    [moves_on] = found[retry]
    assert "a dead-letter exchange (the default exchange, queue argument)" in moves_on
    assert "a message TTL (5000 ms, queue argument)" in moves_on
    [arrivals] = found[events]
    assert "1 of its 1 newest arrivals (last day) had no death" in arrivals


def test_a_replay_that_came_straight_back_is_called_a_loop(settings, top, unique):
    settings.DLQ_QUEUES = [f"{unique}.*"]
    queue = top.queue("work")
    first = make_message(queue=queue, died_in=queue, exchange="", routing_key=queue)
    make_message(queue=queue, died_in=None, headers={"dlq-origin-id": first.pk})

    [reason] = suspects(unique)[queue]

    assert "1 of its 2 newest arrivals (last day) had no death" in reason
    assert "1 came straight back from a console replay (a loop" in reason


def test_a_policy_s_ttl_counts_and_framework_failures_are_not_deathless(settings, top, unique):
    from tests.health.test_topology import _policy

    settings.DLQ_QUEUES = [f"{unique}.*"]
    delay = top.queue("delay")
    error = top.queue("svc_error")
    make_message(queue=error, died_in=None, headers={"MT-Fault-ExceptionType": "System.Exception",
                                       "MT-Fault-InputAddress": "rabbitmq://h/svc"})  # fmt: skip
    name = f"{unique}-delay"
    _policy("PUT", name, {"pattern": f"^{unique}\\.delay$", "apply-to": "queues",
                          "definition": {"message-ttl": 60000}, "priority": 100})  # fmt: skip
    try:
        found = wait_for(lambda: suspects(unique).get(delay), 30, "the policy to apply")
    finally:
        _policy("DELETE", name)

    assert f"a message TTL (60000 ms, policy {name})" in found[0]
    assert error not in suspects(unique)  # MassTransit moved it there: it says why it failed


def test_an_older_drainer_is_known_by_its_connection_name(settings, rabbit, top, unique):
    """Drainers before 0.12 consumed with the broker's default tags."""
    settings.DLQ_QUEUES = [f"{unique}.*.dlq"]
    park = top.queue("a.dlq")
    conn = amqp.connect(rabbit.url, "dlq-drain oldhost pid 7")
    conn.channel().basic_consume(park, lambda *a: None)
    try:
        queues = wait_for(
            lambda: [q for q in listed(park) if q.get("consumers")], 30, "the consumer"
        )
        assert drained.foreign_consumers("/", queues) == {}
    finally:
        conn.close()
