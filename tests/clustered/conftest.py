"""The console pointed at the test's three-node cluster (the `cluster` fixture)."""

import contextlib

import pika
import pytest

from dlq.broker import amqp


@pytest.fixture
def on_cluster(cluster, settings, monkeypatch):
    """The console's settings, and every process the test starts, on the cluster: the broker
    and management URLs list the three nodes, as DLQ_BROKER_URL does in production."""
    management = ",".join(node.management for node in cluster.nodes)
    settings.DLQ_BROKER_URL = cluster.url()
    settings.DLQ_MANAGEMENT_URL = management
    monkeypatch.setenv("DLQ_BROKER_URL", cluster.url())
    monkeypatch.setenv("DLQ_MANAGEMENT_URL", management)
    return cluster


@pytest.fixture
def declare(on_cluster):
    """declare(name, node, **arguments): a durable queue declared through `node` (a classic
    queue lives there); deleted after the test, once the cluster is whole again."""
    made = []

    def on(name: str, node, **arguments) -> str:
        conn = pika.BlockingConnection(pika.URLParameters(node.url()))
        try:
            conn.channel().queue_declare(name, durable=True, arguments=arguments or None)
        finally:
            conn.close()
        made.append(name)
        return name

    yield on
    on_cluster.heal()  # the fixture heals too, later: a queue on a dead node cannot go
    conn = amqp.connect(on_cluster.url(), "dlq-tests-cleanup")
    for name in made:
        with contextlib.suppress(*amqp.AllErrors):
            conn.channel().queue_delete(name)
    conn.close()


def publish(node, queue: str, bodies: list[bytes]) -> None:
    """Persistent messages with confirms, through `node`: each is on disk when this returns."""
    conn = pika.BlockingConnection(pika.URLParameters(node.url()))
    try:
        channel = conn.channel()
        channel.confirm_delivery()
        for body in bodies:
            props = pika.BasicProperties(delivery_mode=2)
            channel.basic_publish("", queue, body, props, mandatory=True)
    finally:
        conn.close()
