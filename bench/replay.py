#!/usr/bin/env python
"""Replay benchmark: a bulk replay job against the raw confirm-publish ceiling (not a test).

    .venv/bin/python bench/replay.py [--n 20000] [--size 1024] [--runs 1] [--sql]

1. Creates (drops and recreates) a dedicated benchmark database and migrates it.
2. Stores N parked messages of SIZE body bytes, persistent, with a real-looking `x-death`
   (bulk inserts through dlq/drain/store.py, exactly the rows the drainer writes), all of which
   died in the benchmark's own durable work queue.
3. Ceiling: the same N messages, built exactly as a replay builds them, published by
   `dlq.broker.amqp.ConfirmPublisher` alone (asynchronous confirms, the product's window, mandatory,
   no database) into the work queue.
4. The product: `jobs.create_job` (replay by filter to `failed_queue`, no rate limit), then
   `job_run.run_job` in-process, timed from start to finish with every message confirmed and
   settled in the database. Progress is printed while it runs.

Both publish into the same durable queue, purged in between; the queue is deleted at the
end. Each run starts from truncated tables, analyzed once filled (what autovacuum would do).
The machine is shared: run it a few times (--runs). The benchmark database is separate
(default postgres://root@127.0.0.1:5432/dlq_bench_replay; --database-url or
DLQ_BENCH_REPLAY_DATABASE_URL): DATABASE_URL is ignored, because this script drops it.
"""

import argparse
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BROKER = "amqp://guest:guest@localhost:5672/%2F"
DEFAULT_DB = "postgres://root@127.0.0.1:5432/dlq_bench_replay"
SEED_CHUNK = 2000
LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
    "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. "
)


def body_of(i: int, size: int) -> bytes:
    head = f'{{"order_id": {i}, "customer": "c-{i % 977}", "note": "'
    pad = max(size - len(head) - 2, 0)
    return (head + (LOREM * (pad // len(LOREM) + 1))[:pad] + '"}').encode()[:size]


def make_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name or not name.replace("_", "").isalnum():
        raise SystemExit(f"refusing an odd benchmark database name: {name!r}")
    admin = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    env = {**os.environ, "DATABASE_URL": url}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)


def setup_django(db_url: str, broker_url: str) -> None:
    os.environ["DATABASE_URL"] = db_url
    os.environ["DLQ_BROKER_URL"] = broker_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ.setdefault("DLQ_LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def seed(n: int, size: int, park: str, work: str) -> None:
    """N parked rows as the drainer stores them (a real x-death naming the work queue)."""
    from datetime import UTC, datetime

    from dlq.broker import amqp, codec
    from dlq.drain import pending, store
    from dlq.messages.ingest import Delivery, build_row
    from tests.factories import death_headers

    now = datetime.now(UTC)
    deaths = death_headers(work, "rejected", "", [work], now)
    started = time.perf_counter()
    for first in range(0, n, SEED_CHUNK):
        rows = []
        for i in range(first, min(first + SEED_CHUNK, n)):
            headers = {**deaths, **codec.typed_table({"tenant": f"t-{i % 17}", "attempt": 1})}
            props = amqp.make_properties(
                {
                    "content_type": "application/json",
                    "delivery_mode": 2,
                    "message_id": f"bench-{i}",
                    "timestamp": int(now.timestamp()),
                    "app_id": "dlq-bench",
                },  # fmt: skip
                headers,
            )
            delivery = Delivery(park, "/", "", work, False, props, body_of(i, size))
            rows.append(build_row(delivery, now))
        batch = uuid.uuid4().hex
        store.store_batch(batch, "bench", rows)
        pending.forget_batches([batch])
        print(f"  stored {min(first + SEED_CHUNK, n):,}", end="\r", flush=True)
    print(f"  stored {n:,} parked messages in {time.perf_counter() - started:.1f} s", flush=True)


def fresh_tables() -> None:
    """Every run starts from empty tables (no dead rows left by the previous run)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE dlq_message, dlq_job, dlq_pendingbatch RESTART IDENTITY CASCADE")


def analyze() -> None:
    """Planner statistics for the freshly filled tables, as autovacuum would gather them."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE dlq_message, dlq_jobitem, dlq_job, dlq_replay")


def ceiling(park: str, window: int, broker_url: str) -> float:
    """ConfirmPublisher alone, no database: the same messages, built as a replay builds them."""
    from dlq.actions import replay
    from dlq.broker import amqp
    from dlq.models import Message

    outgoing = []
    for message in Message.objects.filter(queue=park).order_by("id").iterator(chunk_size=2000):
        route = replay.resolve(message, "failed_queue")
        outgoing.append(replay.build(message, route, uuid.uuid4().hex))
    publisher = amqp.ConfirmPublisher(broker_url, "dlq-bench-ceiling", window=window)
    try:
        started = time.perf_counter()
        results = publisher.publish(outgoing, timeout=600)
        elapsed = time.perf_counter() - started
    finally:
        publisher.close()
    confirmed = sum(1 for outcome, _ in results.values() if outcome == "confirmed")
    if confirmed != len(outgoing):
        raise SystemExit(f"ceiling: {confirmed:,} of {len(outgoing):,} confirmed")
    return len(outgoing) / elapsed


class Profile:
    """--sql: time per step of the job (claim, publish, settle) and per kind of statement,
    in every thread the job uses."""

    # (module, name): each step patched where the job calls it.
    STEPS = (("job_batch", "_claim_batch"), ("job_run", "_publish"), ("job_run", "settle_batch"))

    def __init__(self):
        from django.db.backends.signals import connection_created

        from dlq.actions import job_batch, job_run

        modules = {"job_batch": job_batch, "job_run": job_run}

        self.stats: dict[str, list] = {}
        for module, name in self.STEPS:
            timed = self._timed(f"step {name.lstrip('_')}", getattr(modules[module], name))
            setattr(modules[module], name, timed)
        connection_created.connect(self._on_connection, weak=False)

    def _add(self, key: str, seconds: float) -> None:
        entry = self.stats.setdefault(key, [0, 0.0])
        entry[0] += 1
        entry[1] += seconds

    def _timed(self, key, fn):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._add(key, time.perf_counter() - started)

        return timed

    def _on_connection(self, sender, connection, **kwargs):
        connection.execute_wrappers.append(self._sql)

    def _sql(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self._add("  sql " + " ".join(sql.split())[:72], time.perf_counter() - started)

    def report(self) -> None:
        for key, (count, seconds) in sorted(self.stats.items(), key=lambda kv: -kv[1][1])[:14]:
            print(f"  {seconds:7.3f} s {count:6d}x  {key}")


def run_job(park: str, n: int, sql: bool) -> float:
    from django.db import connection

    from dlq.actions import job_run, jobs
    from dlq.models.actions import Job

    job = jobs.create_job("bench", "replay", filters={"queue": park}, target="failed_queue",
                          reason="benchmark")  # fmt: skip
    if job.total != n:
        raise SystemExit(f"job selected {job.total:,} messages, expected {n:,}")
    analyze()
    outcome = {}
    profile = Profile() if sql else None

    def work():
        try:
            outcome["status"] = job_run.run_job(job.pk)
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    started = time.perf_counter()
    thread.start()
    while thread.is_alive():
        thread.join(timeout=1.0)
        done = Job.objects.filter(pk=job.pk).values_list("done", flat=True).get()
        print(f"  job {job.pk}: {done:,} / {n:,} settled", flush=True)
    elapsed = time.perf_counter() - started
    job.refresh_from_db()
    if outcome.get("status") != "done" or job.done != n:
        raise SystemExit(f"job ended {outcome.get('status')} with {job.done:,} of {n:,} done")
    if profile:
        profile.report()
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="messages (20000)")
    parser.add_argument("--size", type=int, default=1024, help="body bytes (1024)")
    parser.add_argument("--runs", type=int, default=1, help="ceiling + job pairs (1)")
    parser.add_argument("--batch", type=int, help="override job_batch.BATCH (to explore)")
    parser.add_argument(
        "--sql", action="store_true", help="time the job's steps and SQL statements"
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DLQ_BENCH_REPLAY_DATABASE_URL", DEFAULT_DB),
        help=f"benchmark database, dropped and recreated ({DEFAULT_DB})",
    )
    parser.add_argument("--broker-url", default=os.environ.get("DLQ_BROKER_URL", DEFAULT_BROKER))
    parser.add_argument(
        "--management-url",
        default=os.environ.get("DLQ_MANAGEMENT_URL", "http://guest:guest@localhost:15672"),
        help="the same broker's management API (RabbitMQ 4.0 here: http://...:15673)",
    )
    args = parser.parse_args()
    os.environ["DLQ_MANAGEMENT_URL"] = args.management_url

    print(f"benchmark database {args.database_url}: recreating and migrating", flush=True)
    make_database(args.database_url)
    setup_django(args.database_url, args.broker_url)
    from django.conf import settings

    from dlq.actions import job_batch
    from dlq.broker import amqp

    if args.batch:
        job_batch.BATCH = args.batch

    prefix = f"dlqbench-replay-{uuid.uuid4().hex[:8]}"
    park, work = f"{prefix}.dlq", f"{prefix}.work"
    conn = amqp.connect(args.broker_url, "dlq-bench")
    channel = conn.channel()
    channel.queue_declare(work, durable=True)
    window = settings.DLQ_REPLAY_WINDOW
    results = []
    try:
        for run in range(1, args.runs + 1):
            print(f"run {run}: seeding", flush=True)
            fresh_tables()
            seed(args.n, args.size, park, work)
            print(f"run {run}: ceiling (ConfirmPublisher, window {window}, no database)")
            top = ceiling(park, window, args.broker_url)
            print(f"  {top:,.0f} msg/s", flush=True)
            channel.queue_purge(work)
            print(f"run {run}: bulk replay job (job_run.run_job, in-process)", flush=True)
            rate = run_job(park, args.n, args.sql)
            depth = channel.queue_declare(work, passive=True).method.message_count
            if depth != args.n:
                raise SystemExit(f"the work queue holds {depth:,}, expected {args.n:,}")
            channel.queue_purge(work)
            print(f"  {rate:,.0f} msg/s ({rate / top:.2f} of the ceiling)", flush=True)
            results.append((top, rate))
    finally:
        channel.queue_delete(work)
        conn.close()

    print()
    print(f"N = {args.n:,} messages, body {args.size} B, persistent, durable queue, "
          f"window {window}, batch of the job {job_batch.BATCH}")  # fmt: skip
    print(f"{'run':<6}{'ceiling msg/s':>15}{'job msg/s':>12}{'ratio':>8}")
    for run, (top, rate) in enumerate(results, 1):
        print(f"{run:<6}{top:>15,.0f}{rate:>12,.0f}{rate / top:>8.2f}")
    best = max(results, key=lambda r: r[1] / r[0])
    print(f"target: job >= 0.5 x ceiling; best ratio {best[1] / best[0]:.2f}")


if __name__ == "__main__":
    main()
