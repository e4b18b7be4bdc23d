"""Queue lifecycle under a running drainer, memory bounded by the prefetch window, SQLite."""

import hashlib
import os
import sqlite3
import time
import uuid
from urllib.parse import urlsplit

import pytest

from tests.drainproc import manage, row_count, run_once, stored_bodies, twins, wait_for, wait_rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST_RESOLVE = {"DLQ_RESOLVE_SECONDS": "1"}


def unique_bodies(n: int, tag: str) -> list[tuple[bytes, dict]]:
    return [(f'{{"n": {i}, "tag": "{tag}"}}'.encode(), {"n": i}) for i in range(n)]


def test_queues_come_and_go_under_a_running_drainer(broker, spawn, db_url, unique):
    first = broker.declare(f"{unique}.a.dlq")
    broker.publish_many(first, unique_bodies(300, "one"))
    missing = f"{unique}.missing"
    proc = spawn([f"{unique}.*.dlq", missing], db_url, env=FAST_RESOLVE)
    wait_for(lambda: row_count(first) == 300, 60, "the first queue to drain")

    # A configured literal name that does not exist is logged, and is not fatal.
    wait_for(
        lambda: [
            line for line in proc.events("queue does not exist", prefix=True) if missing in line
        ],
        10,
        "the missing queue to be reported",
    )
    assert proc.alive()

    # A new queue that matches the glob is drained without a restart.
    second = broker.declare(f"{unique}.b.dlq")
    broker.publish_many(second, unique_bodies(200, "two"))
    wait_for(lambda: row_count(second) == 200, 30, "the new queue to be found and drained")

    # A queue deleted while it is consumed (the broker sends basic.cancel) and declared
    # again is picked up again.
    broker.ch.queue_delete(first)
    wait_for(lambda: proc.events("queue was deleted", prefix=True), 10, "the cancel to be noticed")
    broker.ch.queue_declare(first, durable=True)
    broker.publish_many(first, unique_bodies(100, "three"))
    wait_for(lambda: row_count(first) == 400, 30, "the re-declared queue to drain")

    # The missing queue, once declared, is drained too.
    broker.declare(missing)
    broker.publish_many(missing, unique_bodies(50, "four"))
    wait_for(lambda: row_count(missing) == 50, 30, "the once-missing queue to drain")

    assert proc.alive()
    assert proc.stop() == 0, proc.log()[-3000:]
    assert len(proc.events("connected")) == 1, proc.log()[-3000:]
    for name in (first, second, missing):
        assert max(stored_bodies(name).values()) == 1
        assert broker.depth(name) == 0


def test_a_queue_deleted_in_the_middle_of_a_backlog(broker, spawn, db_url, unique):
    parking = broker.declare(f"{unique}.dlq")
    broker.publish_many(parking, unique_bodies(20_000, "old"))
    proc = spawn([parking], db_url, env={**FAST_RESOLVE, "DLQ_DRAIN_BATCH": "100"})
    wait_rows(parking, 1000, 60, "the drain to be under way", 0.01)
    broker.ch.queue_delete(parking)  # the rest of the backlog is gone with it
    wait_for(lambda: proc.events("queue was deleted", prefix=True), 10, "the cancel to be noticed")
    broker.ch.queue_declare(parking, durable=True)
    fresh = unique_bodies(500, "new")
    broker.publish_many(parking, fresh)

    wait_for(lambda: all(stored_bodies(parking)[body] for body, _ in fresh), 30, "the new messages")
    assert proc.alive()
    assert proc.stop() == 0, proc.log()[-3000:]
    stored = stored_bodies(parking)
    assert max(stored.values()) == 1  # nothing stored twice, whatever the deletion cut off
    assert broker.depth(parking) == 0


def test_memory_is_bounded_by_the_prefetch_window(broker, spawn, db_url, unique):
    mib, count = 1024 * 1024, 300
    parking = broker.declare(f"{unique}.dlq")
    digests = []
    batch = []
    for i in range(count):
        body = os.urandom(mib)
        digests.append(hashlib.sha256(body).hexdigest())
        batch.append((body, {"i": i}))
        if len(batch) == 25:
            broker.publish_many(parking, batch)
            batch = []
    broker.wait_depth(parking, count)

    env = {"DLQ_DRAIN_PREFETCH": "20", "DLQ_DRAIN_BATCH": "10"}
    proc = spawn([parking], db_url, env=env, name="memory")
    while row_count(parking) < count:
        assert proc.alive(), proc.log()[-3000:]
        proc.sample_rss()
        time.sleep(0.05)
    peak_mib = proc.sample_rss() / 1024  # VmHWM: the high-water mark of the whole run
    print(f"drainer peak RSS {peak_mib:.0f} MiB for {count} messages of 1 MiB")
    assert proc.stop() == 0, proc.log()[-3000:]
    # The interpreter with Django and pika is about 95 MiB; holding every message would add
    # more than 300 MiB. The window is 20 of them, each copied a few times while written.
    assert peak_mib < 250, f"peak RSS {peak_mib:.0f} MiB"

    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT encode(sha256(body), 'hex'), size FROM dlq_message WHERE queue = %s",
            [parking],
        )
        rows = cursor.fetchall()
    assert sorted(d for d, _ in rows) == sorted(digests)
    assert {size for _, size in rows} == {mib}
    assert broker.depth(parking) == 0


def test_drains_into_sqlite(broker, unique):
    path = f"/tmp/dlq-drain-{uuid.uuid4().hex}.sqlite3"
    url = f"sqlite:///{path}"
    try:
        done = manage(url, "migrate", "--noinput")
        assert done.returncode == 0, done.stdout + done.stderr
        messages = twins(1500, 40, unique)
        parking = broker.backlog(unique, messages)

        proc = run_once([parking], url, env={"DLQ_DRAIN_BATCH": "200"})
        assert proc.proc.returncode == 0, proc.log()
        with sqlite3.connect(path) as db:
            stored = db.execute(
                "SELECT count(*), count(DISTINCT body) FROM dlq_message WHERE queue = ?",
                [parking],
            ).fetchone()
            pending = db.execute("SELECT count(*) FROM dlq_pendingbatch").fetchone()[0]
        assert stored == (1500, 40)
        assert pending == 0
        assert broker.depth(parking) == 0
    finally:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)


class LateManagement:
    """The management API, answering late: each answer is fetched from the real one when
    asked, then held for `delay` seconds, so it tells how things were when it was asked."""

    def __init__(self, upstream: str):
        import threading
        import urllib.request
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.delay, self.held, self.sent = 0.0, 0, 0
        late = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urlsplit(upstream)
                request = urllib.request.Request(f"http://{parts.hostname}:{parts.port}{self.path}")
                request.add_header("Authorization", self.headers.get("Authorization", ""))
                with urllib.request.urlopen(request, timeout=10) as response:
                    status, body = response.status, response.read()
                delay = late.delay
                late.held += bool(delay)
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)
                late.sent += bool(delay)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        parts = urlsplit(upstream)
        self.url = f"http://{parts.username}:{parts.password}@127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


def test_a_queue_deleted_while_the_listing_is_out_is_not_subscribed_again(
    broker, unique, settings, rabbit
):
    """The drainer asks for its queues in the background and goes on consuming meanwhile.
    A queue deleted after the question was put is still in its answer: applied, that
    answer subscribed to the deleted queue, the broker closed the drainer's channel for it
    (and with it every consumer), and the drainer had to reconnect."""
    import threading

    from dlq.drain.drainer import Drainer
    from dlq.models import Message

    late = LateManagement(rabbit.management)
    settings.DLQ_MANAGEMENT_URL = late.url
    settings.DLQ_RESOLVE_SECONDS = 1
    kept, deleted = broker.declare(f"{unique}.kept.dlq"), broker.declare(f"{unique}.gone.dlq")
    broker.publish_many(kept, unique_bodies(1, "kept"))
    broker.publish_many(deleted, unique_bodies(1, "gone"))
    drainer = Drainer(patterns=[f"{unique}.*.dlq"])
    thread = threading.Thread(target=drainer.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: Message.objects.count() == 2, 30, "both queues drained")
        late.delay = 3.0
        wait_for(lambda: late.held, 10, "a question whose answer is held")
        broker.ch.queue_delete(deleted)  # the held answer still lists it
        wait_for(lambda: late.sent, 10, "the held answer")
        late.delay = 0.0
        broker.publish_many(kept, unique_bodies(1, "after"))
        wait_for(lambda: Message.objects.count() == 3, 30, "the kept queue drained on")
        time.sleep(2)  # two more resolves: a reconnect, had there been one, is seen below
        assert drainer.generation == 1  # one connection, one channel, all along
    finally:
        drainer.stop()
        thread.join(timeout=30)
        late.close()


def test_a_queue_whose_name_holds_nul_is_left_in_the_broker_and_the_others_drain(
    broker, spawn, db_url, unique
):
    # RabbitMQ accepts the name; the database's text cannot hold it. Its batches used to be
    # retried for ever by the writer every queue shares: nothing was stored any more.
    nul = broker.declare(f"{unique}.nul\x00name.dlq")
    broker.publish_many(nul, unique_bodies(3, "nul"))
    proc = spawn([f"{unique}.*.dlq"], db_url, env=FAST_RESOLVE)
    fine = broker.declare(f"{unique}.fine.dlq")
    broker.publish_many(fine, unique_bodies(5, "fine"))

    wait_for(lambda: row_count(fine) == 5, 30, "the other queue to drain")

    assert broker.depth(nul) == 3
    assert proc.alive()
    [event] = proc.events("queue not drained, its messages stay in the broker")
    assert ascii(nul) in event and "NUL character" in event
