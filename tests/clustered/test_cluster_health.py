"""Operators see the cluster: with a node killed, the health page and /metrics show it down
and the others up, which node each drainer is connected to, and a drained quorum queue that
lost a replica; /readyz stays ready with two nodes of three."""

import re

import pytest
from django.test import Client
from django.utils import timezone

from dlq.models import DrainedQueue, Message
from dlq.models.health import DrainerHeartbeat
from tests.clustered.conftest import publish
from tests.drainproc import DrainProcess, wait_for
from tests.factories import client_for, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _metric(text: str, name: str, **labels) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def _row(page: str, text: str) -> str:
    """The table row (or list item) of the page holding `text`."""
    for row in re.findall(r"<(?:tr|li)\b.*?</(?:tr|li)>", page, re.S):
        if text in row:
            return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row))
    raise AssertionError(f"no row with {text!r}")


def test_a_killed_node_is_down_on_the_page_and_in_metrics_and_readyz_stays_ready(
    on_cluster, declare, unique
):
    cluster = on_cluster
    first, *others = cluster.nodes  # the first of both URL lists: the console must move on
    parking = declare(f"{unique}.dlq", others[0], **{"x-queue-type": "quorum"})
    now = timezone.now()
    DrainedQueue.objects.create(
        vhost="/", name=parking, queue_type="quorum", first_seen_at=now, last_seen_at=now
    )
    viewer = client_for(make_user("viewer"))

    cluster.kill(first)
    wait_for(lambda: first.name not in cluster.running(), 30, "the others to see it down")

    page = viewer.get("/topology/").content.decode()
    assert "down" in _row(page, first.name)
    for node in others:
        assert "up" in _row(page, node.name)
    assert "2 of 3 nodes running" in page
    # Under its own check: on 4.0 the queue has a row under the delivery-limit check too.
    part = re.search(r'<section class="check check-under_replicated".*?</section>', page, re.S)
    assert part and "Replicas down" in part.group(0)
    warning = _row(part.group(0), parking)
    assert f"2 of 3 replicas online ({first.name} down)" in warning

    metrics = viewer.get("/metrics").content.decode()
    assert _metric(metrics, "dlq_broker_node_up", node=first.name) == 0
    assert [_metric(metrics, "dlq_broker_node_up", node=n.name) for n in others] == [1, 1]
    assert _metric(metrics, "dlq_queue_replicas", queue=parking) == 3
    assert _metric(metrics, "dlq_queue_replicas_online", queue=parking) == 2
    assert _metric(metrics, "dlq_queue_available", queue=parking) == 1

    ready = Client().get("/readyz")
    assert ready.status_code == 200, ready.content
    assert ready.json()["checks"]["broker"] == "ok"


def test_the_page_names_the_node_the_drainer_is_on_and_its_move(
    on_cluster, declare, unique, db_url
):
    cluster = on_cluster
    parking = declare(f"{unique}.dlq", cluster.nodes[1], **{"x-queue-type": "quorum"})
    viewer = client_for(make_user("viewer"))
    drainer = DrainProcess([parking], db_url, env={"DLQ_DRAIN_HEARTBEAT": "2"})
    try:

        def on_node() -> str:
            row = DrainerHeartbeat.objects.filter(pid=drainer.pid).first()
            return row.node if row else ""

        wait_for(on_node, 60, "the drainer's heartbeat to name its node")
        [before] = [n for n in cluster.nodes if on_node() == f"127.0.0.1:{n.amqp_port}"]
        item = _row(viewer.get("/topology/").content.decode(), f"pid {drainer.pid}")
        assert f"connected to {before.name} (127.0.0.1:{before.amqp_port})" in item
        metrics = viewer.get("/metrics").content.decode()
        assert _metric(metrics, "dlq_drainer_node", node=before.name) == 1

        cluster.kill(before)
        wait_for(lambda: on_node() not in ("", f"127.0.0.1:{before.amqp_port}"), 60,
                 "the drainer to report another node")  # fmt: skip
        [after] = [n for n in cluster.nodes if on_node() == f"127.0.0.1:{n.amqp_port}"]
        # Draining there: a message parked after the loss is stored. (The drainer's ack ledger
        # lived on the killed node: it waits at most 5 s for it, not for 4.0's answer, ~67 s.)
        publish(after, parking, [b"after the loss"])
        wait_for(lambda: Message.objects.filter(queue=parking).exists(), 30,
                 "the drainer to drain on its new node")  # fmt: skip
        page = viewer.get("/topology/").content.decode()
        assert f"connected to {after.name}" in _row(page, f"pid {drainer.pid}")
        assert "down" in _row(page, before.name)
        metrics = viewer.get("/metrics").content.decode()
        assert _metric(metrics, "dlq_drainer_node", node=after.name) == 1
        assert _metric(metrics, "dlq_drainer_node", node=before.name) is None
        assert drainer.stop() == 0, drainer.log()[-3000:]
    finally:
        drainer.cleanup()
