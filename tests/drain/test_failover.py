"""A drainer whose node dies or hangs mid-drain moves on to the cluster's next node by itself.

DLQ_BROKER_URL lists two nodes: node 1 is a TCP proxy in front of the broker
(tests/nodeproxy.py), node 2 the broker itself. The drainer starts on node 1 with a large
backlog; the proxy is SIGKILLed (every connection through it drops at once) or SIGSTOPped
(the connection goes silent) mid-drain. The same drainer process must finish the backlog
on node 2, storing every message exactly once: the backlog is full of byte-identical twins,
so a dedup that took a twin for a redelivered copy shows up as a lost message, and an ack
the dying node dropped shows up as a duplicate.
"""

import pytest

from tests.drainproc import (
    body_counts,
    drainer_connections,
    pending_summary,
    row_count,
    stored_bodies,
    twins,
    wait_for,
    wait_rows,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
SMALL_BATCHES = {"DLQ_DRAIN_BATCH": "100", "DLQ_DRAIN_PREFETCH": "400"}  # many acks in flight


def _drain_through_node1(node1, rabbit, broker, spawn, db_url, unique, total, **env):
    messages = twins(total, 300, unique)
    parking = broker.backlog(unique, messages)
    proc = spawn([parking], db_url, env={**node1.cluster(), **SMALL_BATCHES, **env})
    wait_rows(parking, total // 5, 60, "the drain to be under way", 0.02)
    # Its one AMQP connection went through node 1 (the management API is node 1's too).
    assert node1.accepted(rabbit.url) == 1, proc.log()[-3000:]
    return messages, parking, proc


def _check_exact(proc, broker, parking, messages) -> None:
    wait_rows(parking, len(messages), 90, "the drain to finish on node 2")
    assert proc.alive(), proc.log()[-3000:]  # no restart
    assert len(proc.events("connected")) == 2, proc.log()[-3000:]
    assert len(proc.events("connection lost")) == 1, proc.log()[-3000:]
    assert proc.stop() == 0, proc.log()[-3000:]
    assert stored_bodies(parking) == body_counts(messages)  # none lost, none twice
    # A batch committed as the connection dropped was never acked: its pending record made
    # the redelivered copies recognised, and they took its rows over. No pending batch
    # still vouches for a stored message, or a later twin would be taken for a copy.
    assert _pending_with_rows() == 0, pending_summary()
    assert broker.depth(parking) == 0
    print(len(proc.events("the broker dropped acks with the connection", True)), "ack drops")


def test_the_drainer_fails_over_when_its_node_dies_mid_drain(
    node1, rabbit, broker, spawn, db_url, unique
):
    total = 20_000
    messages, parking, proc = _drain_through_node1(
        node1, rabbit, broker, spawn, db_url, unique, total
    )
    node1.kill()
    assert row_count(parking) < total, "the drain ended before node 1 died: nothing tested"
    wait_for(lambda: len(proc.events("connected")) == 2, 15, "the drainer to reach node 2")
    _check_exact(proc, broker, parking, messages)


def test_the_drainer_fails_over_when_its_node_hangs_mid_drain(
    node1, rabbit, broker, spawn, db_url, unique
):
    # A hung node answers nothing and closes nothing: only missed heartbeats tell. Its
    # connection stays open on the broker's side until the broker misses the drainer's
    # heartbeats too; the deliveries it held come back then, as redeliveries to node 2.
    total = 20_000
    messages, parking, proc = _drain_through_node1(
        node1, rabbit, broker, spawn, db_url, unique, total, DLQ_DRAIN_HEARTBEAT="2"
    )
    node1.freeze()
    frozen_at = row_count(parking)
    assert frozen_at < total, "the drain ended before node 1 hung: nothing tested"
    wait_for(lambda: len(proc.events("connected")) == 2, 30, "the drainer to give up node 1")
    # What node 1 still holds (unsent acks, a commit) never reaches the broker: the proxy
    # stays stopped until the test ends (teardown kills it), as a dead machine would.
    wait_for(lambda: len(drainer_connections(proc.pid)) == 1, 60, "the broker to drop node 1")
    _check_exact(proc, broker, parking, messages)


def _pending_with_rows() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT p.id) FROM dlq_pendingbatch p"
            " JOIN dlq_message m ON m.drain_batch = p.id"
        )
        return cursor.fetchone()[0]
