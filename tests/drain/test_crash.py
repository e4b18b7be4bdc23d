"""The drainer killed with SIGKILL, or stopped with SIGTERM/SIGINT, loses and duplicates nothing.

The messages are mostly byte-for-byte twins (a few hundred distinct bodies and headers among
thousands), so the checks prove both halves of the idempotency scheme at once: redeliveries
after a crash collapse, and distinct-but-identical messages all stay.
"""

import os
import random
import signal
import time
import uuid

import pytest

from tests.drainproc import (
    body_counts,
    death_seconds,
    fingerprints,
    pending_batches,
    pending_summary,
    row_count,
    run_once,
    stored_bodies,
    twins,
    wait_for,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_kill_9_repeatedly_during_a_20000_message_drain(broker, spawn, db_url, unique):
    total, distinct = 20_000, 300
    inbox, parking = broker.parking_with_dlx(unique)
    messages = twins(total, distinct, unique)
    broker.publish_many(inbox, messages)  # dead-lettered at once: each gets a real x-death
    broker.wait_depth(parking, total)

    seed = int(os.environ.get("DLQ_TEST_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    print(f"seed {seed}")
    kills = 0
    for round_ in range(8):
        before = row_count(parking)
        proc = spawn([parking], db_url, name="kill9")
        if round_ % 3 == 0:
            # Anywhere from start-up through connecting to the first batches (but never
            # more than 2,000 rows in: a fast drainer must not finish before the last kill).
            deadline = time.monotonic() + rng.uniform(0.3, 1.5)
            wait_for(
                lambda d=deadline, b=before: time.monotonic() >= d or row_count(parking) > b + 2000,
                60,
                "the kill's moment",
                interval=0.01,
            )
        else:
            # In the middle of the drain: after some hundreds of rows, plus a random instant.
            target = before + rng.randint(200, 1200)
            wait_for(
                lambda t=target, p=proc: row_count(parking) >= t or not p.alive(),
                60,
                "the drainer to make progress",
                interval=0.02,
            )
            time.sleep(rng.uniform(0, 0.02))
        assert proc.alive(), proc.log()[-3000:]
        proc.kill()
        kills += 1
        if row_count(parking) >= total:
            break
    assert kills >= 6
    stored_before_final = row_count(parking)
    assert stored_before_final < total, "the kills should interrupt the drain"

    final = run_once([parking], db_url)
    assert final.proc.returncode == 0, final.log()[-3000:]
    assert broker.depth(parking) == 0, "drain --once stopped before the queue was empty"
    stored = stored_bodies(parking)
    assert sum(stored.values()) == total, pending_summary()
    assert stored == body_counts(messages)  # every twin kept, no redelivery twice
    # Twins down to the byte, x-death included: its time (1 s resolution) is all that tells
    # apart the twins the broker dead-lettered in different seconds.
    assert fingerprints(parking) <= distinct * death_seconds(parking)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_mid_drain_exits_0_with_what_it_stored_acked(
    sig, broker, spawn, db_url, unique
):
    total = 12_000
    messages = twins(total, 200, unique)
    parking = broker.backlog(unique, messages)

    proc = spawn([parking], db_url, env={"DLQ_DRAIN_BATCH": "200"})
    wait_for(lambda: row_count(parking) >= 1500, 60, "the drain to be under way", 0.01)
    assert proc.stop(sig) == 0, proc.log()[-3000:]
    assert proc.events("stopped")
    stored = row_count(parking)
    assert stored < total, "the signal should interrupt the drain"
    # Every stored message was acked, every other one is back in the queue.
    assert stored + broker.depth(parking) == total
    left_pending = pending_batches()

    final = run_once([parking], db_url)
    assert final.proc.returncode == 0, final.log()[-3000:]
    assert stored_bodies(parking) == body_counts(messages)
    assert broker.depth(parking) == 0
    assert left_pending == 0  # a clean stop forgets its batches: nothing looks pending


def test_two_drainers_on_one_queue_one_of_them_stopped_midway(broker, spawn, db_url, unique):
    total = 16_000
    parking = broker.declare(f"{unique}.dlq")
    env = {"DLQ_DRAIN_BATCH": "200", "DLQ_DRAIN_PREFETCH": "600"}
    first = spawn([parking], db_url, env=env, name="first")
    second = spawn([parking], db_url, env=env, name="second")
    for proc in (first, second):
        wait_for(lambda p=proc: p.events("draining", prefix=True), 30, "both drainers to subscribe")
    messages = twins(total, 300, unique)
    broker.publish_many(parking, messages)

    # A rolling restart: one drainer stops while the other keeps draining. What the first
    # had received but not stored goes back to the queue, and reaches the second as
    # redeliveries that must neither be lost nor stored twice.
    wait_for(lambda: row_count(parking) >= 6000, 60, "both drainers to be under way", 0.01)
    assert first.stop() == 0, first.log()[-3000:]
    wait_for(lambda: row_count(parking) >= total, 60, "the second drainer to finish")
    time.sleep(0.5)
    assert second.stop() == 0, second.log()[-3000:]

    assert first.events("batch stored") and second.events("batch stored")
    assert stored_bodies(parking) == body_counts(messages)
    assert broker.depth(parking) == 0
    assert pending_batches() == 0


def test_an_acked_batch_left_pending_by_a_crash_is_settled_from_the_ack_ledger(
    broker, db_url, unique
):
    """What a SIGKILL in the microseconds between an ack and the COMMIT of its batch's
    forgetting leaves behind, built by hand (a random kill rarely lands there): a batch that
    is acked, so gone from the broker, yet still pending, and redelivered twins of its
    messages. Taken for its copies, they would be lost; the dead drainer's ack ledger tells
    the next drainer that the batch was acked."""
    from dlq.drain import store
    from dlq.drain.ledger import LEDGER_ARGUMENTS, LEDGER_PREFIX
    from dlq.messages.ingest import Delivery, build_row

    parking = broker.declare(f"{unique}.dlq")
    messages = [(b'{"same": "twin"}', {"k": 1})] * 20
    broker.publish_many(parking, messages)
    broker.wait_depth(parking, 20)

    # The dead drainer: received 15, stored the first 10 as one batch and acked it, noted
    # the ack in its ledger, and died before forgetting the batch.
    ledger_token, conn_token = uuid.uuid4().hex, uuid.uuid4().hex[:24]
    ledger = broker.declare(f"{LEDGER_PREFIX}{ledger_token}", LEDGER_ARGUMENTS)
    ch = broker.conn.channel()
    got = [ch.basic_get(parking) for _ in range(15)]
    rows = []
    for _method, props, body in got[:10]:
        row = build_row(Delivery(parking, "/", "", parking, False, props, body))
        row["_redelivered"] = False
        rows.append(row)
    batch_id = f"{conn_token}{1:08x}"
    store.store_batch(batch_id, f"dlq-drain gone pid 0 {ledger_token} {conn_token}", rows)
    ch.basic_ack(got[9][0].delivery_tag, multiple=True)
    ch.basic_publish("", ledger, batch_id.encode())
    ch.close()  # the other 5 go back to the queue, redelivered
    broker.wait_depth(parking, 10)
    assert pending_batches() == 1

    final = run_once([parking], db_url)
    assert final.proc.returncode == 0, final.log()[-3000:]
    assert final.events("forgot batches that a stopped drainer had acked", True), final.log()
    assert row_count(parking) == 20  # not 15: the 5 redelivered twins are stored
    assert pending_batches() == 0
    assert broker.depth(parking) == 0
