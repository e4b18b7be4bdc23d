"""The drainer rides out a database outage, a slow database and a dropped broker connection.

Each test runs a real drainer subprocess and breaks what it depends on: a throwaway
PostgreSQL stopped with `pg_ctl stop -m immediate`, a table lock that stalls the writer,
the broker connection closed through the management API. The count must come out exact.
"""

import collections
import time

import psycopg
import pytest

from tests.drainproc import (
    body_counts,
    close_connection,
    connection_info,
    drainer_connections,
    pending_batches,
    row_count,
    run_once,
    stored_bodies,
    twins,
    wait_for,
    wait_rows,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_drain_once_on_an_empty_queue_exits_0(broker, db_url, unique):
    parking = broker.declare(f"{unique}.dlq")
    proc = run_once([parking], db_url)
    assert proc.proc.returncode == 0, proc.log()
    assert proc.events("queues drained")


def test_drain_once_with_an_unreachable_broker_exits_non_zero(db_url, unique):
    proc = run_once(
        [f"{unique}.dlq"], db_url, env={"DLQ_BROKER_URL": "amqp://guest:guest@127.0.0.1:1/%2F"}
    )
    assert proc.proc.returncode not in (0, None), proc.log()
    assert proc.events("broker unavailable, giving up"), proc.log()


def test_postgres_stopped_for_15_seconds_mid_drain(scratch_pg, broker, spawn, unique):
    total = 8000
    messages = twins(total, 200, unique)
    parking = broker.backlog(unique, messages)

    def stored() -> int:
        [(n,)] = scratch_pg.query("SELECT count(*) FROM dlq_message WHERE queue = %s", [parking])
        return n

    proc = spawn([parking], scratch_pg.url, env={"DLQ_DRAIN_BATCH": "100"})
    wait_for(lambda: stored() >= 1500, 60, "the drain to be under way", interval=0.02)
    scratch_pg.stop("immediate")
    down_at = time.monotonic()
    log_lines_at_stop = len(proc.log().splitlines())
    while time.monotonic() - down_at < 15:
        assert proc.alive(), proc.log()[-3000:]
        time.sleep(0.5)
    during = proc.log().splitlines()[log_lines_at_stop:]
    scratch_pg.start()

    wait_for(lambda: stored() >= total or not proc.alive(), 90, "the drain to resume by itself")
    assert proc.alive(), proc.log()[-3000:]
    # While the database was down nothing was committed, so nothing was acked.
    assert not [line for line in during if '"batch stored"' in line]
    assert [line for line in during if "the database is unavailable" in line]
    assert proc.stop() == 0, proc.log()[-3000:]

    counts = collections.Counter(
        bytes(body)
        for (body,) in scratch_pg.query("SELECT body FROM dlq_message WHERE queue = %s", [parking])
    )
    assert counts == body_counts(messages)
    assert scratch_pg.query("SELECT count(*) FROM dlq_pendingbatch") == [(0,)]
    assert broker.depth(parking) == 0


def test_broker_closes_the_drainer_connection_mid_drain(broker, spawn, db_url, unique):
    total = 12_000
    parking = broker.declare(f"{unique}.dlq")
    proc = spawn([parking], db_url, env={"DLQ_DRAIN_BATCH": "100", "DLQ_DRAIN_PREFETCH": "400"})
    wait_for(lambda: drainer_connections(proc.pid), 20, "the drainer's connection to show up")
    messages = twins(total, 250, unique)
    broker.publish_many(parking, messages)

    for threshold in (2500, 7000):
        wait_rows(parking, threshold, 60, f"{threshold} rows", 0.02)
        names = wait_for(lambda: drainer_connections(proc.pid), 20, "the drainer's connection")
        assert len(names) == 1
        close_connection(names[0])
        wait_for(
            lambda old=names[0]: [n for n in drainer_connections(proc.pid) if n != old],
            30,
            "the drainer to reconnect by itself",
        )
    wait_rows(parking, total, 90, "the drain to finish")
    assert proc.alive()
    assert len(proc.events("connected")) == 3, proc.log()[-3000:]
    assert len(proc.events("connection lost")) == 2
    assert proc.stop() == 0, proc.log()[-3000:]
    assert stored_bodies(parking) == body_counts(messages)
    assert broker.depth(parking) == 0
    # What the broker dropped with each connection was read back from the drainer's ack
    # ledger: a batch whose ack was lost was made pending again, so its redelivered
    # messages were recognised (no copies), and one whose ack counted was not (no twin lost).
    print(len(proc.events("the broker dropped acks with the connection", True)), "ack drops")


def test_a_slow_database_does_not_cost_the_broker_connection(broker, spawn, db_url, unique):
    total = 6000
    messages = twins(total, 150, unique)
    parking = broker.backlog(unique, messages)
    proc = spawn([parking], db_url, env={"DLQ_DRAIN_HEARTBEAT": "3", "DLQ_DRAIN_BATCH": "100"})
    names = wait_for(lambda: drainer_connections(proc.pid), 20, "the drainer's connection")
    assert connection_info(names[0])["timeout"] == 3  # the negotiated heartbeat
    wait_rows(parking, 1000, 60, "the drain to be under way", 0.02)

    # Hold a lock the writer needs for 12 s: four heartbeat intervals.
    with psycopg.connect(**_dsn()) as locker:
        locker.execute("LOCK TABLE dlq_pendingbatch IN ACCESS EXCLUSIVE MODE")
        time.sleep(0.5)  # a commit in flight when the lock was taken may still finish
        stalled_at = row_count(parking)
        time.sleep(11.5)
        assert row_count(parking) == stalled_at, "the lock should stall the writer"
        assert proc.alive()
        locker.commit()

    wait_rows(parking, total, 60, "the drain to finish")
    assert proc.stop() == 0, proc.log()[-3000:]
    assert len(proc.events("connected")) == 1, proc.log()[-3000:]
    assert not proc.events("connection lost")
    assert stored_bodies(parking) == body_counts(messages)
    assert broker.depth(parking) == 0


def _dsn() -> dict:
    from django.db import connection

    s = connection.settings_dict
    return {
        "host": s["HOST"] or "127.0.0.1",
        "port": s["PORT"] or 5432,
        "user": s["USER"],
        "password": s["PASSWORD"] or None,
        "dbname": s["NAME"],
        "autocommit": False,
    }


def test_drain_once_empties_a_queue_and_leaves_nothing_pending(broker, db_url, unique):
    messages = twins(700, 20, unique)
    parking = broker.backlog(unique, messages)
    proc = run_once([parking], db_url, env={"DLQ_DRAIN_BATCH": "100"})
    assert proc.proc.returncode == 0, proc.log()
    assert stored_bodies(parking) == body_counts(messages)
    assert pending_batches() == 0
    assert broker.depth(parking) == 0
