#!/usr/bin/env python
"""Replay benchmark: a bulk replay job as a user meets it, against plain pika (not a test).

    .venv/bin/python bench/replay.py [--n 20000] [--size 1024] [--runs 1] [--sql] [--batch B]

1. Creates (drops and recreates) a dedicated benchmark database and migrates it; makes an
   operator with an API token. Starts the console's processes on it, as `make run` starts
   them (manage.py dlq_up): `manage.py runserver --noreload` on a free loopback port and
   `celery -A console worker -l info -c 2`, on a Celery queue of the benchmark's own (so no
   other worker takes its tasks). A job discarding one message of its own is run once
   through both (the console has been up a while when a user meets it; a job must select a
   parked message).
   Then stores the other messages that are there when an operator replays (--stored: the
   issue measures at 1,000,000 in all): real drainer rows of another parking queue, copied
   in SQL, vacuumed and analyzed.
2. Each run: the previous run's rows deleted and vacuumed, then N parked messages of SIZE
   body bytes, persistent, with a real-looking `x-death` (bulk inserts through
   dlq/drain/store.py, exactly the rows the drainer writes; dlq_message analyzed, as
   autovacuum would long since have done), all of which died in the benchmark's own durable
   work queue.
3. Ceiling: plain pika in a child process, no code of the console on its path. The same N
   messages (the same body bytes and properties, and the headers a replay carries:
   tenant, attempt, dlq-replay-id, dlq-replay-count, dlq-origin-id) are built before the
   clock starts; one SelectConnection channel in confirm mode publishes them to the default
   exchange, routing key the work queue, mandatory, delivery_mode 2, keeping 1,000 publishes
   outstanding (refilled from the confirm callback, multiple-aware). Timed from the channel
   being ready (connection set up) to the last confirm; every message must be acked, none
   nacked, none returned, and the work queue must hold N.
4. The product: the HTTP request `POST /api/v1/jobs` (bearer token, replay by filter
   `{"queue": PARKING}` to `failed_queue`, no rate limit) to the running web server, then
   the job's row polled every 20 ms until it reads `done`; timed from sending the request
   to seeing `done`. The job must have done == N with N confirmed, and the work queue must
   hold N. Where the time went, on one clock (the console's processes write the job's
   timestamps with this machine's clock), in segments that add up to the total: the HTTP
   request up to created_at (auth, validation); freezing the selection (created_at to the
   job_create audit row, written after the N job items, before the commit); the commit,
   the Celery task and the worker's pick-up (to started_at); the run (started_at to
   finished_at), split by the batches' Replay rows (started_at: the batch claimed;
   settled_at: its settle begun) into the start, the batches and the last settle; and
   finished_at to the poll that saw `done`. The POST round trip (to the 202) is printed
   beside them: the worker may start before the 202 arrives.

5. A canary that comes back (issue 28): ABORT_N parked messages that died in a work queue
   whose consumer (a thread here) rejects everything into its dead-letter exchange, back to
   a parking queue a real drainer (`manage.py drain`) stores from; `POST /api/v1/jobs` with
   a canary of ABORT_CANARY (max_returns 0 by default); timed from the first return's
   storing (its row's received_at) to the poll that sees the job `aborted` ("abort s").

6. Where the CPU went (bench/cpu.py): each phase's CPU seconds of every process on the
   machine, by role (RabbitMQ, PostgreSQL, the pika child, the console's worker and web
   server), per message. The broker, the database and the console share this machine's
   cores, so when both sides keep every core busy the rates' ratio is bounded by the ratio
   of the machine's busy CPU per message ("CPU ratio", ceiling / product).

Both publish into the same durable queue, purged in between; the queue (and the Celery
queue) are deleted at the end, and the server and worker stopped, whatever happens.

--sql starts the same worker through this file, which patches in the job's steps (claim,
publish, settle) and times them and every SQL statement (their sums overlap: the three
steps run in three threads); --batch B also sets batches.BATCH there. Both cost the
worker some time: the plain worker gives the headline figures.

The machine is shared: run it a few times (--runs). The benchmark database is separate
(default postgres://root@127.0.0.1:5432/dlq_bench_replay; --database-url or
DLQ_BENCH_REPLAY_DATABASE_URL): DATABASE_URL is ignored, because this script drops it.
"""

import argparse
import contextlib
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import cpu  # bench/cpu.py

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BROKER = "amqp://guest:guest@localhost:5672/%2F"
DEFAULT_MANAGEMENT = "http://guest:guest@localhost:15672"
DEFAULT_DB = "postgres://root@127.0.0.1:5432/dlq_bench_replay"
WINDOW = 1000  # the ceiling's outstanding publishes (the product's DLQ_REPLAY_WINDOW default)
TARGET = 0.8  # product >= TARGET x ceiling
SEED_CHUNK = 2000
POLL = 0.02  # seconds between reads of the job's row
JOB_TIMEOUT = 600.0
# Settings of the console the runs must not inherit from the shell: the product's defaults
# are measured (each also as NAME_FILE, see console/env.py).
PRODUCT_SETTINGS = ("DEBUG", "DLQ_REPLAY_WINDOW", "DLQ_REPLAY_KEEP_USER_ID",
                    "DLQ_MAX_MESSAGE_BYTES", "DLQ_JOB_STALE_SECONDS", "CELERY_BROKER_URL",
                    "CELERY_TASK_DEFAULT_QUEUE", "DATABASE_URL", "DLQ_BROKER_URL",
                    "DLQ_MANAGEMENT_URL")  # fmt: skip
WORKER_ARGS = ["-A", "console", "worker", "-l", "info", "-c", "2"]  # as dlq_up starts it
LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
    "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. "
)


def body_of(i: int, size: int) -> bytes:
    head = f'{{"order_id": {i}, "customer": "c-{i % 977}", "note": "'
    pad = max(size - len(head) - 2, 0)
    return (head + (LOREM * (pad // len(LOREM) + 1))[:pad] + '"}').encode()[:size]


# --- the ceiling: a child process of plain pika, nothing of the console -----------------


def ceiling_child(spec: dict) -> None:
    """Publish N prebuilt messages with WINDOW asynchronous confirms outstanding; prints
    the counts and the time from the confirm channel being ready to the last confirm."""
    import pika
    from pika.spec import Basic

    n, window, queue = spec["n"], spec["window"], spec["queue"]
    now = int(time.time())
    messages = []
    for i in range(n):
        headers = {"tenant": f"t-{i % 17}", "attempt": 1, "dlq-replay-id": uuid.uuid4().hex,
                   "dlq-replay-count": 1, "dlq-origin-id": i + 1}  # fmt: skip
        props = pika.BasicProperties(
            content_type="application/json",
            delivery_mode=2,
            message_id=f"bench-{i}",
            timestamp=now,
            app_id="dlq-bench",
            headers=headers,
        )
        messages.append((body_of(i, spec["size"]), props))

    state = {"sent": 0, "acked": 0, "nacked": 0, "returned": 0, "started": 0.0}
    state.update(elapsed=None, error=None, channel=None)
    outstanding: set[int] = set()
    order: deque[int] = deque()  # delivery tags in publish order (1, 2, ...)

    def pump():
        channel = state["channel"]
        while state["sent"] < n and len(outstanding) < window:
            body, props = messages[state["sent"]]
            state["sent"] += 1
            outstanding.add(state["sent"])
            order.append(state["sent"])
            channel.basic_publish("", queue, body, props, mandatory=True)

    def on_confirm(frame):
        method = frame.method
        key = "acked" if isinstance(method, Basic.Ack) else "nacked"
        if method.multiple:
            while order and order[0] <= method.delivery_tag:
                tag = order.popleft()
                if tag in outstanding:
                    outstanding.remove(tag)
                    state[key] += 1
        elif method.delivery_tag in outstanding:
            outstanding.remove(method.delivery_tag)
            state[key] += 1
        if state["acked"] + state["nacked"] == n:
            state["elapsed"] = time.perf_counter() - state["started"]
            conn.close()
        else:
            pump()

    def on_return(_channel, _method, _props, _body):
        state["returned"] += 1

    def on_ready(_frame):
        state["started"] = time.perf_counter()
        pump()

    def on_channel(channel):
        state["channel"] = channel
        channel.add_on_return_callback(on_return)
        channel.confirm_delivery(on_confirm, callback=on_ready)

    def on_open_error(_conn, error):
        state["error"] = repr(error)
        conn.ioloop.stop()

    def on_closed(_conn, reason):
        if state["elapsed"] is None:
            state["error"] = state["error"] or repr(reason)
        conn.ioloop.stop()

    def give_up():
        state["error"] = f"no end after {JOB_TIMEOUT:.0f} s"
        conn.close()

    params = pika.URLParameters(spec["url"])
    params.client_properties = {"connection_name": "dlq-bench-ceiling"}
    conn = pika.SelectConnection(
        params,
        on_open_callback=lambda c: c.channel(on_open_callback=on_channel),
        on_open_error_callback=on_open_error,
        on_close_callback=on_closed,
    )
    conn.ioloop.call_later(JOB_TIMEOUT, give_up)
    conn.ioloop.start()
    print(json.dumps({k: v for k, v in state.items() if k != "channel"}))


def run_ceiling(url: str, queue: str, n: int, size: int) -> float:
    spec = {"url": url.split(",")[0].strip(), "queue": queue, "n": n, "size": size,
            "window": WINDOW}  # fmt: skip
    out = subprocess.run(
        [sys.executable, __file__, "--ceiling-child", json.dumps(spec)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if out.returncode != 0:
        sys.stderr.write(out.stderr[-4000:])
        raise SystemExit(f"ceiling: the pika process exited with {out.returncode}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["error"] or result["acked"] != n or result["nacked"] or result["returned"]:
        raise SystemExit(f"ceiling: not every message confirmed: {result}")
    return n / result["elapsed"]


# --- --sql / --batch: the same worker, started through this file -------------------------


class Profile:
    """Time per step of the job (claim, publish, settle) and per kind of SQL statement, in
    every thread the job uses (in the worker process that runs it)."""

    # (module, name): each step patched where the job calls it.
    STEPS = (("batches", "_claim_batch"), ("running", "_publish"), ("running", "settle_batch"))

    def __init__(self):
        import threading

        from django.db.backends.signals import connection_created

        from dlq.jobs import batches, running

        modules = {"batches": batches, "running": running}
        self.lock = threading.Lock()
        self.stats: dict[str, list] = {}
        for module, name in self.STEPS:
            timed = self._timed(f"step {name.lstrip('_')}", getattr(modules[module], name))
            setattr(modules[module], name, timed)
        connection_created.connect(self._on_connection, weak=False)

    def _add(self, key: str, seconds: float) -> None:
        with self.lock:
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

    def take(self) -> dict:
        with self.lock:
            stats, self.stats = self.stats, {}
        return stats


def worker_shim(options: dict, celery_args: list[str]) -> None:
    """`celery ARGS` after patching the job's module: --batch, and with --sql a Profile whose
    figures each finished task writes to PROFILE_DIR/job-ID.json."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from celery.__main__ import main as celery_main
    from celery.signals import task_postrun

    from dlq.jobs import batches

    if options.get("batch"):
        batches.BATCH = options["batch"]
    if options.get("profile_dir"):
        profile = Profile()

        def report(sender=None, args=None, **_kwargs):
            if sender is not None and sender.name == "dlq.jobtasks.run_job" and args:
                path = Path(options["profile_dir"]) / f"job-{args[0]}.json"
                path.write_text(json.dumps(profile.take()))

        task_postrun.connect(report, weak=False)
    sys.argv = ["celery", *celery_args]
    celery_main()


# --- the benchmark database ---------------------------------------------------------------


def make_database(url: str, env: dict) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name or not name.replace("_", "").isalnum():
        raise SystemExit(f"refusing an odd benchmark database name: {name!r}")
    admin = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)


def setup_django(env: dict) -> None:
    for name in list(os.environ):  # this process runs on the product's defaults too
        if name not in env:
            del os.environ[name]
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ["DLQ_LOG_LEVEL"] = "WARNING"  # this process only
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def operator_token() -> str:
    """A bearer token of an operator (the role that may run jobs)."""
    from django.contrib.auth.models import Group, User

    from dlq.accounts.roles import OPERATOR
    from dlq.accounts.tokens import create_token

    user = User.objects.create_user(username="bench-operator")
    user.groups.add(Group.objects.get_or_create(name=OPERATOR)[0])
    return create_token(user, "replay benchmark")


def seed(n: int, size: int, park: str, work: str, body=None) -> None:
    """N parked rows as the drainer stores them (a real x-death naming the work queue);
    `body(i, size)` makes the i-th body (body_of)."""
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
            delivery = Delivery(park, "/", "", work, False, props, (body or body_of)(i, size))
            rows.append(build_row(delivery, now))
        batch = uuid.uuid4().hex
        store.store_batch(batch, "bench", rows)
        pending.forget_batches([batch])
        print(f"  stored {min(first + SEED_CHUNK, n):,}", end="\r", flush=True)
    print(f"  stored {n:,} parked messages in {time.perf_counter() - started:.1f} s", flush=True)


def fresh_tables(park: str) -> None:
    """Every run starts with none of the previous run's rows: its messages, job, items,
    replays and status changes deleted, and the dead rows vacuumed away. The other stored
    messages (--stored) stay."""
    from django.db import connection

    with connection.cursor() as cursor:
        mine = "SELECT id FROM dlq_message WHERE queue = %s"
        for table in ("dlq_jobitem", "dlq_replay", "dlq_statuschange", "dlq_searchentry"):
            cursor.execute(f"DELETE FROM {table} WHERE message_id IN ({mine})", [park])
        cursor.execute("DELETE FROM dlq_message WHERE queue = %s", [park])
        cursor.execute("DELETE FROM dlq_job")
        cursor.execute("DELETE FROM dlq_pendingbatch")
        cursor.execute("VACUUM dlq_message")


def seed_stored(total: int, n: int, size: int, queue: str, work: str) -> None:
    """The messages already stored beside the job's (the issue measures at a million):
    `total - n` parked rows in another queue, copies of real drainer rows."""
    from django.db import connection

    others = max(total - n, 0)
    if not others:
        return
    print(f"storing {others:,} other messages (--stored {total:,})", flush=True)
    started = time.perf_counter()
    seed(min(others, SEED_CHUNK * 10), size, queue, work)
    grow(queue, others)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE dlq_message")
    took = time.perf_counter() - started
    print(f"  {others:,} other messages stored in {took:.0f} s", flush=True)


def grow(queue: str, total: int) -> None:
    """Copy the queue's stored rows (new ids, in SQL) until it holds `total`."""
    from django.db import connection

    columns = ", ".join(
        connection.ops.quote_name(f.column) for f in _message_fields() if f.column != "id"
    )
    with connection.cursor() as cursor:
        while (have := _count(cursor, queue)) < total:
            cursor.execute(
                f"INSERT INTO dlq_message ({columns}) SELECT {columns} FROM dlq_message"
                " WHERE queue = %s ORDER BY id LIMIT %s",
                [queue, total - have],
            )
            print(f"  stored {_count(cursor, queue):,}", end="\r", flush=True)


def _message_fields():
    from dlq.models import Message

    return Message._meta.concrete_fields


def _count(cursor, queue: str) -> int:
    cursor.execute("SELECT count(*) FROM dlq_message WHERE queue = %s", [queue])
    return cursor.fetchone()[0]


def analyze() -> None:
    """Planner statistics for the parked rows, as autovacuum would long since have gathered
    them; the job's own rows (items, replays) are left as a new job finds them."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE dlq_message")


# --- the console's processes ----------------------------------------------------------------


class Child:
    """A process of the console in its own process group, its output in a file."""

    def __init__(self, name: str, cmd: list[str], env: dict, logs: Path):
        self.name = name
        self.path = logs / f"{name}.log"
        with open(self.path, "ab") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def output(self) -> str:
        return self.path.read_text(errors="replace")

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise SystemExit(f"the {self.name} exited ({self.proc.returncode}):\n{self.tail()}")

    def tail(self, chars: int = 3000) -> str:
        return self.output()[-chars:]

    def stop(self) -> None:
        """SIGTERM to its group (a worker finishes its task), SIGKILL after 20 s."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(child: Child, ready, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        child.check_alive()
        if time.monotonic() > deadline:
            raise SystemExit(f"no {what} after {timeout:.0f} s:\n{child.tail()}")
        time.sleep(0.1)


class Api:
    """The console's HTTP API, a new connection per request (as curl or a script)."""

    def __init__(self, port: int, token: str):
        self.port, self.token = port, token

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=JOB_TIMEOUT)
        try:
            conn.request(
                method,
                path,
                body=json.dumps(body) if body is not None else None,
                headers={"Authorization": f"Bearer {self.token}",
                         "Content-Type": "application/json"},
            )  # fmt: skip
            response = conn.getresponse()
            data = response.read()
            try:
                return response.status, json.loads(data)
            except ValueError:
                return response.status, data.decode(errors="replace")
        finally:
            conn.close()

    def healthy(self) -> bool:
        try:
            return self.call("GET", "/healthz")[0] == 200
        except OSError:
            return False


def job_body(queue: str) -> dict:
    # The queue has no consumer while the job runs (its depth is the measure): no gate.
    return {"action": "replay", "filter": {"queue": queue}, "target": "failed_queue",
            "reason": "replay benchmark", "require_consumers": False}  # fmt: skip


def warm_up(api: Api, queue: str, work: str) -> None:
    """One small job through the server and the worker: discarding one message of its own
    (a job must select a parked message, and a discard publishes nothing)."""
    seed(1, 16, queue, work)
    body = {"action": "discard", "filter": {"queue": queue}, "reason": "replay benchmark warm-up"}
    status, job = api.call("POST", "/api/v1/jobs", body)
    if status != 202:
        raise SystemExit(f"warm-up: POST /api/v1/jobs answered {status}: {job}")
    deadline = time.monotonic() + 60
    while api.call("GET", f"/api/v1/jobs/{job['id']}")[1]["status"] != "done":
        if time.monotonic() > deadline:
            raise SystemExit("warm-up: the worker did not run the warm-up job in 60 s")
        time.sleep(0.1)
    fresh_tables(queue)  # its message, item and job, as a run's own rows


# --- the product's run ------------------------------------------------------------------------


def job_state(job_id: int) -> tuple[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT status, done FROM dlq_job WHERE id = %s", [job_id])
        return cursor.fetchone()


def product_run(api: Api, park: str, n: int, worker: Child) -> dict:
    """POST the job, poll its row until it is done; wall-clock times (time.time(), the clock
    the console's processes write the job's timestamps with)."""
    sent = time.time()
    status, job = api.call("POST", "/api/v1/jobs", job_body(park))
    answered = time.time()
    if status != 202:
        raise SystemExit(f"POST /api/v1/jobs answered {status}: {job}")
    if job["total"] != n:
        raise SystemExit(f"the job selected {job['total']:,} messages, expected {n:,}")
    shown = answered
    while True:
        state, done = job_state(job["id"])
        seen = time.time()
        if state not in ("pending", "running"):
            break
        if seen - shown >= 1.0:
            print(f"  job {job['id']}: {state}, {done:,} / {n:,} settled", flush=True)
            shown = seen
        if seen - sent > JOB_TIMEOUT:
            raise SystemExit(f"job {job['id']} not done after {JOB_TIMEOUT:.0f} s")
        worker.check_alive()
        time.sleep(POLL)
    return {"id": job["id"], "sent": sent, "answered": answered, "seen": seen}


# --- a canary that comes back ---------------------------------------------------------------

ABORT_N, ABORT_CANARY = 50, 5  # parked messages of the canary job, and its canary


class Rejecter:
    """A consumer of the canary's work queue that fails every message (reject, no requeue:
    the queue's dead-letter exchange takes it back to the parking queue a drainer drains)."""

    def __init__(self, url: str, queue: str):
        import threading

        self.url, self.queue = url.split(",")[0].strip(), queue
        self.stopping, self.ready = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, name="bench-rejecter", daemon=True)
        self.thread.start()
        if not self.ready.wait(30):
            raise SystemExit("the rejecting consumer did not start")

    def _run(self) -> None:
        import pika

        conn = pika.BlockingConnection(pika.URLParameters(self.url))
        channel = conn.channel()
        channel.basic_consume(
            self.queue, lambda ch, method, _p, _b: ch.basic_reject(method.delivery_tag, False)
        )
        self.ready.set()
        while not self.stopping.is_set():
            conn.process_data_events(time_limit=0.1)
        conn.close()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(10)


def abort_run(api: Api, back: str) -> float:
    """A replay of the `back` queue with a canary of ABORT_CANARY into a queue whose consumer
    rejects everything: seconds from the first return's storing (its row's received_at, the
    drainer's clock, this machine's) to this poll seeing the job `aborted`."""
    body = {"action": "replay", "filter": {"queue": back}, "target": "failed_queue",
            "canary": ABORT_CANARY, "reason": "abort benchmark"}  # fmt: skip
    status, job = api.call("POST", "/api/v1/jobs", body)
    if status != 202:
        raise SystemExit(f"POST /api/v1/jobs (canary) answered {status}: {job}")
    deadline = time.monotonic() + 120
    while (state := job_state(job["id"])[0]) != "aborted":
        if state not in ("pending", "running", "waiting") or time.monotonic() > deadline:
            raise SystemExit(f"the canary job {job['id']} reads {state}, not aborted")
        time.sleep(POLL)
    seen = time.time()
    # Every message of the canary comes back; all stored before the next run cleans up.
    while (returns := _returns(job["id"]))[0] < ABORT_CANARY:
        if time.monotonic() > deadline:
            raise SystemExit(f"{returns[0]} of the canary's {ABORT_CANARY} came back")
        time.sleep(POLL)
    return seen - returns[1].timestamp()


def _returns(job_id: int) -> tuple:
    """How many of the job's messages came back, and when the first was stored."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), min(m.received_at) FROM dlq_message m JOIN dlq_jobitem i"
            " ON i.message_id = m.previous_id WHERE i.job_id = %s",
            [job_id],
        )
        return cursor.fetchone()


def check_job(job_id: int, n: int) -> None:
    from dlq.models import Message, Status
    from dlq.models.actions import Job

    job = Job.objects.get(pk=job_id)
    replayed = Message.objects.filter(status=Status.REPLAYED).count()
    if (job.status, job.done, job.failed, job.outcomes, replayed) != (
        "done", n, 0, {"confirmed": n}, n
    ):  # fmt: skip
        raise SystemExit(
            f"job {job_id} ended {job.status}: done {job.done:,}, failed {job.failed:,},"
            f" outcomes {job.outcomes}, {replayed:,} messages replayed; expected {n:,} confirmed"
        )


def timeline(job_id: int, times: dict) -> dict:
    """Where the time went, on one clock: the job's timestamps, its job_create audit row
    (written when the selection is frozen, before the commit) and its batches' Replay rows
    (started_at = when the batch was claimed, settled_at = when its settle began)."""
    from django.db.models import Count, Min

    from dlq.models import AuditEntry
    from dlq.models.actions import AuditAction, Job, Replay

    job = Job.objects.values("created_at", "started_at", "finished_at").get(pk=job_id)
    created, started, finished = (job[k].timestamp() for k in job)
    # Job ids restart with every run's tables; the audit trail does not: the newest row.
    audit = AuditEntry.objects.filter(action=AuditAction.JOB_CREATE, job_id=job_id)
    frozen = audit.order_by("-id").values_list("at", flat=True).first().timestamp()
    batches = [
        (row["started_at"].timestamp(), row["settled"].timestamp(), row["n"])
        for row in Replay.objects.filter(job_id=job_id)
        .values("started_at")
        .annotate(settled=Min("settled_at"), n=Count("id"))
        .order_by("started_at")
    ]
    t = {
        "post": times["answered"] - times["sent"],
        "answered_after_start": times["answered"] - started,
        "request": created - times["sent"],
        "freeze": frozen - created,
        "pickup": started - frozen,
        "run": finished - started,
        "seen": times["seen"] - finished,
        "total": times["seen"] - times["sent"],
        "batches": len(batches),
    }
    if batches:
        t["first_claim"] = batches[0][0] - started
        t["batch_span"] = batches[-1][1] - batches[0][0]
        t["last_settle"] = finished - batches[-1][1]
        t["claim_to_settle"] = statistics.mean(s - c for c, s, _ in batches)
        if len(batches) > 1:
            t["cadence"] = (batches[-1][1] - batches[0][1]) / (len(batches) - 1)
            t["cadence_n"] = statistics.mean(k for _, _, k in batches[1:])
    return t


def print_breakdown(t: dict, n: int, top: float) -> None:
    def line(label: str, seconds: float, note: str = "") -> None:
        share = f"{seconds / t['total']:6.1%}" if t["total"] > 0 else ""
        print(f"    {label:<44}{seconds:7.3f} s {share}  {note}".rstrip())

    print(f"  where the product's {t['total']:.2f} s went (one after another, they add up):")
    line("HTTP request, auth, validation -> created_at", t["request"])
    line("freezing the selection (-> audit row)", t["freeze"], f"{n:,} job items")
    line("commit, queue task, pick-up -> started_at", t["pickup"])
    line("run: started_at -> finished_at", t["run"], f"{n / t['run']:,.0f} msg/s")
    if t["batches"]:
        line("  start -> 1st batch claimed", t["first_claim"])
        line(f"  {t['batches']} batches: 1st claimed -> last settle", t["batch_span"])
        line("  last settle begins -> finished_at", t["last_settle"])
        note = f"per batch, claimed -> its settle begins: {t['claim_to_settle']:.3f} s (mean)"
        if "cadence" in t:
            note += (
                f"; a settle begins every {t['cadence']:.3f} s"
                f" ({t['cadence_n'] / t['cadence']:,.0f} msg/s); the ceiling publishes"
                f" {t['cadence_n']:,.0f} in {t['cadence_n'] / top:.3f} s"
            )
        print(f"        {note}")
    line("finished_at -> the poll that saw done", t["seen"])
    when = "after" if t["answered_after_start"] >= 0 else "before"
    print(f"    (the POST round trip, request sent -> 202 received, took {t['post']:.3f} s; the 202"
          f" came {abs(t['answered_after_start']):.3f} s {when} started_at)")  # fmt: skip


CPU_ROLES = (("broker", "RabbitMQ"), ("postgresql", "PostgreSQL"), ("waited", "pika client"),
             ("worker", "console worker"), ("web", "web server"), ("bench", "this script"),
             ("other", "anything else"))  # fmt: skip


def print_cpu(ceiling: dict, product: dict, n: int) -> None:
    """CPU per message by process, both sides: on two shared cores the ratio of the
    machine's busy time per message bounds the ratio of the rates."""
    c, p = cpu.per_message(ceiling, n), cpu.per_message(product, n)
    print("  CPU per message (µs), all processes of the machine:   ceiling   product")
    for role, label in CPU_ROLES:
        if c.get(role, 0) >= 0.5 or p.get(role, 0) >= 0.5:
            print(f"    {label:<50}{c.get(role, 0):>8.0f}{p.get(role, 0):>10.0f}")
    print(f"    {'the machine, busy':<50}{c['machine']:>8.0f}{p['machine']:>10.0f}"
          f"   (ceiling / product: {c['machine'] / p['machine']:.2f})")  # fmt: skip


def print_profile(path: Path, worker: Child) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        worker.check_alive()
        if time.monotonic() > deadline:
            print("  (the worker wrote no profile)")
            return
        time.sleep(0.1)
    time.sleep(0.1)  # written in one go; let it land
    stats = json.loads(path.read_text())
    print("  in the worker (threads overlap: claim, publish and settle run at once):")
    for key, (count, seconds) in sorted(stats.items(), key=lambda kv: -kv[1][1])[:14]:
        print(f"    {seconds:7.3f} s {count:6d}x  {key}")


# --- the benchmark ------------------------------------------------------------------------------


def child_env(base: dict, args, celery_queue: str | None = None) -> dict:
    env = {
        k: v
        for k, v in base.items()
        if k not in PRODUCT_SETTINGS and k.removesuffix("_FILE") not in PRODUCT_SETTINGS
    }
    env.update(DATABASE_URL=args.database_url, DLQ_BROKER_URL=args.broker_url,
               DLQ_MANAGEMENT_URL=args.management_url, PYTHONUNBUFFERED="1")  # fmt: skip
    if celery_queue:
        env["CELERY_TASK_DEFAULT_QUEUE"] = celery_queue  # the server queues, the worker takes
    return env


def bench(args, base_env: dict, logs: Path) -> list[dict]:
    import pika

    print(f"benchmark database {args.database_url}: recreating and migrating", flush=True)
    make_database(args.database_url, child_env(base_env, args))
    setup_django(child_env(base_env, args))
    token = operator_token()

    prefix = f"dlqbench-replay-{uuid.uuid4().hex[:8]}"
    park, work, celery_queue = f"{prefix}.dlq", f"{prefix}.work", f"{prefix}.celery"
    # The canary's: a work queue dead-lettering into a parking queue a drainer drains.
    back, canary_work, back_x = f"{prefix}.back", f"{prefix}.canary", f"{prefix}.back-x"
    env = child_env(base_env, args, celery_queue)
    port = free_port()
    worker_args = [*WORKER_ARGS, "-Q", celery_queue, "-n", f"{prefix}@%h"]
    profile_dir = logs / "profile" if args.sql else None
    if profile_dir:
        profile_dir.mkdir()
    if args.sql or args.batch:
        options = {"batch": args.batch, "profile_dir": str(profile_dir) if profile_dir else None}
        worker_cmd = [sys.executable, __file__, "--worker-shim", json.dumps(options), *worker_args]
    else:
        worker_cmd = [sys.executable, "-m", "celery", *worker_args]

    conn = pika.BlockingConnection(pika.URLParameters(args.broker_url.split(",")[0].strip()))
    children: list[Child] = []
    results = []
    try:
        channel = conn.channel()
        channel.queue_declare(work, durable=True)
        channel.exchange_declare(back_x, "fanout")
        channel.queue_declare(back, durable=True)
        channel.queue_bind(back, back_x)
        channel.queue_declare(canary_work, arguments={"x-dead-letter-exchange": back_x})
        server_cmd = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
        children.append(Child("server", server_cmd, env, logs))
        children.append(Child("worker", worker_cmd, env, logs))
        drain_cmd = [sys.executable, "manage.py", "drain", "--queues", back]
        children.append(Child("drainer", drain_cmd, env, logs))
        server, worker, _drainer = children
        rejecter = Rejecter(args.broker_url, canary_work)
        api = Api(port, token)
        print(f"starting the web server (127.0.0.1:{port}) and the Celery worker", flush=True)
        wait_until(server, api.healthy, "answer on /healthz")
        wait_until(worker, lambda: " ready." in worker.output(), "ready worker")
        warm_up(api, f"{prefix}.warm", work)
        seed_stored(args.stored, args.n, args.size, f"{prefix}.other", work)

        for run in range(1, args.runs + 1):
            print(f"run {run}: seeding", flush=True)
            fresh_tables(park)
            seed(args.n, args.size, park, work)
            analyze()
            channel.queue_purge(work)
            print(f"run {run}: ceiling (plain pika, window {WINDOW}, no console code)", flush=True)
            meter = cpu.Meter()
            meter.start()
            top = run_ceiling(args.broker_url, work, args.n, args.size)
            ceiling_cpu = meter.stop()
            depth = channel.queue_declare(work, passive=True).method.message_count
            if depth != args.n:
                raise SystemExit(f"ceiling: the work queue holds {depth:,}, expected {args.n:,}")
            channel.queue_purge(work)
            print(f"  {top:,.0f} msg/s", flush=True)

            print(f"run {run}: POST /api/v1/jobs, the worker runs it", flush=True)
            meter = cpu.Meter({server.proc.pid: "web", worker.proc.pid: "worker"})
            meter.start()
            times = product_run(api, park, args.n, worker)
            product_cpu = meter.stop()
            check_job(times["id"], args.n)
            depth = channel.queue_declare(work, passive=True).method.message_count
            if depth != args.n:
                raise SystemExit(f"the work queue holds {depth:,}, expected {args.n:,}")
            channel.queue_purge(work)
            t = timeline(times["id"], times)
            rate = args.n / t["total"]
            print(f"  {rate:,.0f} msg/s ({rate / top:.2f} of the ceiling)", flush=True)
            print_breakdown(t, args.n, top)
            print_cpu(ceiling_cpu, product_cpu, args.n)
            if profile_dir:
                print_profile(profile_dir / f"job-{times['id']}.json", worker)
            cpu_ratio = ceiling_cpu["machine"] / product_cpu["machine"]

            print(f"run {run}: a canary of {ABORT_CANARY} that comes back", flush=True)
            fresh_tables(park)  # its job goes: the run's figures are taken
            fresh_tables(back)
            seed(ABORT_N, args.size, back, canary_work)
            abort = abort_run(api, back)
            print(f"  aborted {abort:.2f} s after the first return was stored", flush=True)
            fresh_tables(back)  # its job and replays, before the next run's clean-up
            results.append({"ceiling": top, "product": rate, **t, "cpu_ratio": cpu_ratio,
                            "abort": abort})  # fmt: skip
    finally:
        if "rejecter" in locals():
            rejecter.stop()
        for child in reversed(children):
            child.stop()
        cleanup(conn, args.broker_url, [work, celery_queue, back, canary_work],
                [celery_queue, back_x])  # fmt: skip
    return results


def cleanup(conn, broker_url: str, queues: list[str], exchanges: list[str]) -> None:
    """Delete the benchmark's queues (each on its own channel: a missing one closes it)."""
    import pika

    with contextlib.suppress(Exception):
        if conn is not None and conn.is_open:
            conn.close()
    try:
        conn = pika.BlockingConnection(pika.URLParameters(broker_url.split(",")[0].strip()))
    except Exception as e:
        print(f"cleanup: cannot connect to delete {queues}: {e!r}", file=sys.stderr)
        return
    try:
        for name in queues:
            with contextlib.suppress(Exception):
                conn.channel().queue_delete(name)
        for name in exchanges:
            with contextlib.suppress(Exception):
                conn.channel().exchange_delete(name)
    finally:
        with contextlib.suppress(Exception):
            conn.close()


def main() -> None:
    if sys.argv[1:2] == ["--ceiling-child"]:
        return ceiling_child(json.loads(sys.argv[2]))
    if sys.argv[1:2] == ["--worker-shim"]:
        return worker_shim(json.loads(sys.argv[2]), sys.argv[3:])

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="messages (20000)")
    parser.add_argument("--size", type=int, default=1024, help="body bytes (1024)")
    parser.add_argument("--runs", type=int, default=1, help="ceiling + job pairs (1)")
    parser.add_argument("--stored", type=int, default=1_000_000,
                        help="messages stored in all, the job's N included (1000000)")  # fmt: skip
    parser.add_argument("--batch", type=int, help="worker's batches.BATCH (to explore)")
    parser.add_argument(
        "--sql", action="store_true", help="time the job's steps and SQL in the worker"
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DLQ_BENCH_REPLAY_DATABASE_URL", DEFAULT_DB),
        help=f"benchmark database, dropped and recreated ({DEFAULT_DB})",
    )
    parser.add_argument("--broker-url", default=os.environ.get("DLQ_BROKER_URL", DEFAULT_BROKER))
    parser.add_argument(
        "--management-url",
        default=os.environ.get("DLQ_MANAGEMENT_URL", DEFAULT_MANAGEMENT),
        help="the same broker's management API (RabbitMQ 4.0 here: http://...:15673)",
    )
    args = parser.parse_args()
    base_env = dict(os.environ)
    # A SIGTERM ends the benchmark as Ctrl-C does: the server and the worker are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="dlq-bench-replay-") as logs:
        results = bench(args, base_env, Path(logs))

    from django.conf import settings

    from dlq.jobs import batches

    print()
    print(f"N = {args.n:,} messages, body {args.size} B, persistent, durable queue;"
          f" {args.stored:,} stored in all; ceiling window {WINDOW};"
          f" product window {settings.DLQ_REPLAY_WINDOW},"
          f" batch {args.batch or batches.BATCH}, worker -c 2"
          f"{' (patched: --sql/--batch)' if args.sql or args.batch else ''}")  # fmt: skip
    print("product: POST /api/v1/jobs sent -> job seen done; ceiling: confirm channel ready ->"
          " last confirm; POST: sent -> 202; freeze: created_at -> audit row; pickup: audit"
          " row -> started_at; run: started_at -> finished_at; CPU ratio: the machine's busy"
          " CPU per message, ceiling / product")  # fmt: skip
    print(f"{'run':<8}{'ceiling msg/s':>14}{'product msg/s':>15}{'ratio':>7}{'POST s':>8}"
          f"{'freeze s':>10}{'pickup s':>10}{'run s':>8}{'total s':>9}"
          f"{'CPU ratio':>11}{'abort s':>9}")  # fmt: skip

    def row(label: str, r: dict) -> None:
        print(
            f"{label:<8}{r['ceiling']:>14,.0f}{r['product']:>15,.0f}{r['ratio']:>7.2f}"
            f"{r['post']:>8.2f}{r['freeze']:>10.2f}{r['pickup']:>10.3f}{r['run']:>8.2f}"
            f"{r['total']:>9.2f}{r['cpu_ratio']:>11.2f}{r['abort']:>9.2f}"
        )

    for r in results:
        r["ratio"] = r["product"] / r["ceiling"]
    for run, r in enumerate(results, 1):
        row(str(run), r)
    columns = ("ceiling", "product", "ratio", "post", "freeze", "pickup", "run", "total",
               "cpu_ratio", "abort")  # fmt: skip
    median = {k: statistics.median(r[k] for r in results) for k in columns}
    if len(results) > 1:
        row("median", median)
    verdict = "met" if median["ratio"] >= TARGET else "NOT met"
    print(f"target: product >= {TARGET} x ceiling; median ratio {median['ratio']:.2f}: {verdict}")


if __name__ == "__main__":
    main()
