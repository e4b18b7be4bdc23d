#!/usr/bin/env python
"""Drain benchmark: the product's drainer against the raw pika ceiling (not a test).

    .venv/bin/python bench/drain.py [--n 50000] [--size 1024] [--skip-two] [--vhosts 20]
        [--without-tallies] [--cluster [3.10|4.0]]

1. Creates (drops and recreates) a dedicated benchmark database and migrates it.
2. Fills a parking queue with N persistent messages that carry a real `x-death`: they are
   published into a work queue with `x-message-ttl=0` whose DLX routes into the parking
   queue, so the broker dead-letters each one (reason `expired`).
3. Raw ceiling: plain pika (its own codec, no database) consumes N with prefetch 2000 and
   `basic_ack(multiple=True)` every 500.
4. Refills, then runs `manage.py drain --once --queues PARKING` as a subprocess with the
   product defaults (batch 1000, prefetch 2000, flush 50 ms, synchronous commits) and
   measures messages/s from the first to the last stored batch, and its peak RSS.
5. Refills and does the same with two drainer processes on the same queue.
6. With --vhosts K: the same N spread over K fresh vhosts (one parking queue each), drained
   by one drainer process (`VHOST/QUEUE` glob), against raw pika consuming the same
   messages vhost after vhost in the same run; the vhosts are deleted afterwards.
7. With --cluster VERSION (3.10 or 4.0; 3.10 if none is named): the same measurement on
   the private three-node cluster of .ci/cluster (started if it is not running), the
   parking queue a quorum queue, DLQ_BROKER_URL and DLQ_MANAGEMENT_URL listing the three
   nodes (the drainer connects to the first, as does the ceiling); it also prints the
   memory the three nodes need (the VmRSS of their beam.smp, summed): before filling and
   the peak of the whole run. The broker's CPU is then the cluster's alone.

Rates are steady-state: ceiling from the first to the last delivery; drainers from the
start of the first stored batch to the start of the last one (the rows of the last batch
are left out), so interpreter start-up and the --once idle wait do not count. Wall times
of the whole subprocess are printed too. The machine is shared: run it a few times.

The benchmark database is separate (default postgres://root@127.0.0.1:5432/dlq_bench;
--database-url or DLQ_BENCH_DATABASE_URL): DATABASE_URL is deliberately ignored, because
this script drops the database it uses.
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import cluster as private_cluster  # bench/cluster.py
import cpu as cpu_use  # bench/cpu.py

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BROKER = "amqp://guest:guest@localhost:5672/%2F"
DEFAULT_MANAGEMENT = "http://guest:guest@localhost:15672"
DEFAULT_DB = "postgres://root@127.0.0.1:5432/dlq_bench"
PREFETCH, ACK_EVERY = 2000, 500
PRODUCT_SETTINGS = ("DLQ_DRAIN_BATCH", "DLQ_DRAIN_PREFETCH", "DLQ_DRAIN_FLUSH_MS",
                    "DLQ_DRAIN_BATCH_BYTES", "DLQ_RESOLVE_SECONDS", "DLQ_QUEUES")  # fmt: skip
LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
    "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. "
)


# --- the raw ceiling (a child process: plain pika, its own codec, nothing of dlq) -------


def ceiling_worker(targets: list[tuple[str, str]], n: int) -> None:
    """Consume n messages from each (url, queue) in turn: one vhost's connection each."""
    import pika

    state = {"count": 0, "first": 0.0, "last": 0.0}
    started = time.perf_counter()
    for url, queue in targets:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.basic_qos(prefetch_count=PREFETCH)
        state["here"] = 0

        def on_message(channel, method, _props, _body):
            state["count"] += 1
            state["here"] += 1
            if state["count"] == 1:
                state["first"] = time.perf_counter()
            if state["here"] % ACK_EVERY == 0 or state["here"] == n:
                channel.basic_ack(method.delivery_tag, multiple=True)
            if state["here"] == n:
                state["last"] = time.perf_counter()
                channel.stop_consuming()

        ch.basic_consume(queue, on_message)
        ch.start_consuming()
        conn.close()
    n = state["count"]
    elapsed = state["last"] - state["first"]
    print(
        json.dumps(
            {
                "count": state["count"],
                "rate": (n - 1) / elapsed if elapsed > 0 else 0.0,
                "wall": time.perf_counter() - started,
                "cpu": [time.process_time()],  # the whole process, as for the drainers
            }
        )
    )


# --- helpers --------------------------------------------------------------------------


def _psycopg_url(url: str, dbname: str | None = None) -> str:
    parts = urlsplit(url)
    scheme = "postgresql"
    path = f"/{dbname}" if dbname is not None else parts.path
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


def make_database(url: str, tallies: bool = True) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    if not name or not name.replace("_", "").isalnum():
        raise SystemExit(f"refusing an odd benchmark database name: {name!r}")
    with psycopg.connect(_psycopg_url(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"],
        cwd=ROOT,
        env=drainer_env(url, DEFAULT_BROKER),
        check=True,
    )
    if not tallies:  # what the queues' count triggers cost the drainer (migration 0021)
        with psycopg.connect(_psycopg_url(url), autocommit=True) as conn:
            for kind in ("insert", "update", "delete", "truncate"):
                conn.execute(f"DROP TRIGGER dlq_tally_{kind} ON dlq_message")


def drainer_env(db_url: str, broker_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in PRODUCT_SETTINGS}
    env.update(DATABASE_URL=db_url, DLQ_BROKER_URL=broker_url)
    env.setdefault("DLQ_MANAGEMENT_URL", DEFAULT_MANAGEMENT)
    if PREFETCH_OVERRIDE:  # --prefetch: the one product setting a run may change
        env["DLQ_DRAIN_PREFETCH"] = str(PREFETCH_OVERRIDE[0])
    return env


PREFETCH_OVERRIDE: list[int] = []


def body_of(i: int, size: int) -> bytes:
    head = (
        f'{{"order_id": {i}, "customer": "c-{i % 977}", "currency": "EUR", '
        f'"items": [{{"sku": "SKU-{i % 131}", "qty": {i % 7 + 1}}}], "note": "'
    )
    pad = max(size - len(head) - 2, 0)
    text = head + (LOREM * (pad // len(LOREM) + 1))[:pad] + '"}'
    return text.encode()[:size]


class Broker:
    def __init__(self, url: str, prefix: str, queue_type: str = "classic"):
        from dlq.broker import amqp, codec

        self.amqp, self.codec = amqp, codec
        self.url = url
        self.work, self.parking, self.dlx = f"{prefix}.work", f"{prefix}.park", f"{prefix}.dlx"
        self.conn = amqp.connect(url, "dlq-bench")
        self.ch = self.conn.channel()
        self.ch.exchange_declare(self.dlx, "fanout", durable=True)
        quorum = {"x-queue-type": "quorum"} if queue_type == "quorum" else None
        self.ch.queue_declare(self.parking, durable=True, arguments=quorum)
        self.ch.queue_bind(self.parking, self.dlx)
        args = {"x-message-ttl": 0, "x-dead-letter-exchange": self.dlx}
        self.ch.queue_declare(self.work, durable=True, arguments=args)

    def depth(self) -> int:
        return self.ch.queue_declare(self.parking, passive=True).method.message_count

    def fill(self, n: int, size: int) -> float:
        """Dead-letter n messages into the parking queue; the publish rate."""
        amqp, codec = self.amqp, self.codec
        if self.depth():
            self.ch.queue_purge(self.parking)
        started = time.perf_counter()
        now = int(time.time())
        for i in range(n):
            headers = codec.typed_table({"tenant": f"tenant-{i % 17}", "attempt": i % 3 + 1})
            props = amqp.make_properties(
                {
                    "content_type": "application/json",
                    "delivery_mode": 2,
                    "message_id": f"bench-{i}",
                    "timestamp": now,
                    "app_id": "dlq-bench",
                },
                headers,
            )
            self.ch.basic_publish("", self.work, body_of(i, size), props)
            if (i + 1) % 10_000 == 0:
                self.conn.process_data_events(0)
                print(f"  published {i + 1:,}", flush=True)
        rate = n / (time.perf_counter() - started)
        deadline = time.monotonic() + 120
        while (depth := self.depth()) < n:
            if time.monotonic() > deadline:
                raise SystemExit(f"parking queue holds {depth:,} of {n:,} after 120 s")
            self.conn.process_data_events(0.1)
        print(f"  parking queue holds {depth:,} (published at {rate:,.0f} msg/s)", flush=True)
        return rate

    def close(self) -> None:
        try:
            conn = self.amqp.connect(self.url, "dlq-bench-cleanup")
            ch = conn.channel()
            for name in (self.work, self.parking):
                ch.queue_delete(name)
            ch.exchange_delete(self.dlx)
            conn.close()
        finally:
            if self.conn.is_open:
                self.conn.close()


def run_ceiling(targets: list[tuple[str, str]], n: int) -> dict:
    """n messages from each (url, queue) target, in a child process of plain pika."""
    out = subprocess.run(
        [sys.executable, __file__, "--ceiling-worker", json.dumps(targets), "--n", str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measured_ceiling(targets: list[tuple[str, str]], n: int) -> dict:
    meter = cpu_use.Meter()
    meter.start()
    result = run_ceiling(targets, n)
    return {**result, **_spent(meter.stop())}


def _spent(spent: dict) -> dict:
    """The machine's busy CPU seconds, and the broker's and the database's share of them."""
    return {"machine_cpu": spent["machine"], "broker_cpu": spent.get("broker", 0.0),
            "db_cpu": spent.get("postgresql", 0.0)}  # fmt: skip


def run_drainers(count: int, queue: str, db_url: str, broker_url: str) -> dict:
    """Start `count` drainers on the queue: wall time, each one's peak RSS (KiB) and CPU."""
    with contextlib.ExitStack() as stack:
        logs = [stack.enter_context(tempfile.TemporaryFile()) for _ in range(count)]
        started, meter = time.perf_counter(), cpu_use.Meter()
        meter.start()
        procs = [
            subprocess.Popen(
                [sys.executable, "manage.py", "drain", "--once", "--queues", queue],
                cwd=ROOT,
                env=drainer_env(db_url, broker_url),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            for log in logs
        ]
        peaks, cpu = [0] * count, [0.0] * count
        try:
            while any(p.returncode is None for p in procs):
                for i, p in enumerate(procs):
                    if p.returncode is None:
                        # wait4: the child's own peak RSS (ru_maxrss, KiB) and CPU time.
                        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                        if pid:
                            p.returncode = os.waitstatus_to_exitcode(status)
                            peaks[i] = usage.ru_maxrss
                            cpu[i] = usage.ru_utime + usage.ru_stime
                time.sleep(0.02)
        finally:  # interrupted: SIGTERM makes a drainer finish its batch and exit
            for p in procs:
                if p.returncode is None:
                    p.terminate()
                    p.wait()
        wall, spent = time.perf_counter() - started, _spent(meter.stop())
        for p, log in zip(procs, logs, strict=True):
            if p.returncode != 0:
                log.seek(0)
                sys.stderr.write(log.read().decode(errors="replace")[-4000:])
                raise SystemExit(f"a drainer exited with {p.returncode}")
    return {"wall": wall, "peaks_kib": peaks, "cpu": cpu, **spent}


def stored_rate(db_url: str, n: int) -> dict:
    """Rows stored, and the steady-state rate from the first to the last batch's start."""
    import psycopg

    with psycopg.connect(_psycopg_url(db_url)) as conn:
        rows = conn.execute(
            "SELECT min(received_at), count(*) FROM dlq_message GROUP BY drain_batch ORDER BY 1"
        ).fetchall()
        stored = sum(count for _, count in rows)
        sync = conn.execute("SHOW synchronous_commit").fetchone()[0]
    rate = None
    if len(rows) >= 2:
        span = (rows[-1][0] - rows[0][0]).total_seconds()
        rate = (stored - rows[-1][1]) / span if span > 0 else None
    return {"stored": stored, "rate": rate, "batches": len(rows), "sync": sync}


def reset_tables(db_url: str) -> None:
    import psycopg

    with psycopg.connect(_psycopg_url(db_url)) as conn:
        conn.execute(
            "TRUNCATE dlq_message, dlq_pendingbatch, dlq_drainedqueue RESTART IDENTITY CASCADE"
        )


def drain_case(label, count, broker, args) -> dict:
    print(f"{label}: filling", flush=True)
    broker.fill(args.n, args.size)
    reset_tables(args.database_url)
    print(f"{label}: draining with {count} drainer process(es)", flush=True)
    result = run_drainers(count, broker.parking, args.database_url, args.broker_url)
    result.update(stored_rate(args.database_url, args.n))
    if result["stored"] != args.n:
        raise SystemExit(f"{label}: stored {result['stored']:,} rows, expected {args.n:,}")
    left = broker.depth()
    if left:
        raise SystemExit(f"{label}: {left:,} messages left in the parking queue")
    print(
        f"  stored {result['stored']:,} in {result['batches']} batches,"
        f" {result['rate']:,.0f} msg/s, wall {result['wall']:.1f} s",
        flush=True,
    )
    return result


class Vhosts:
    """K fresh vhosts, each with the bench's topology (one Broker each); deleted on close."""

    def __init__(self, broker_url: str, management_url: str, prefix: str, k: int):
        from dlq.broker import amqp

        self.management = management_url
        self.names = [f"{prefix}-{i:03d}" for i in range(k)]
        self.brokers = []
        for name in self.names:
            self._api("PUT", f"/api/vhosts/{name}")
            self._api("PUT", f"/api/permissions/{name}/{self._user()}", PERMISSIONS)
            self.brokers.append(Broker(amqp.nodes(broker_url, name)[0], prefix))
        self.parking = self.brokers[0].parking  # the same name in every vhost

    def fill(self, n: int, size: int) -> None:
        for broker in self.brokers:
            broker.fill(n // len(self.brokers), size)

    def depth(self) -> int:
        return sum(broker.depth() for broker in self.brokers)

    def targets(self) -> list[tuple[str, str]]:
        return [(broker.url, broker.parking) for broker in self.brokers]

    def close(self) -> None:
        for broker in self.brokers:
            with contextlib.suppress(Exception):
                broker.close()
        for name in self.names:
            with contextlib.suppress(Exception):
                self._api("DELETE", f"/api/vhosts/{name}")

    def _user(self) -> str:
        return urlsplit(self.management).username or "guest"

    def _api(self, method: str, path: str, body: dict | None = None) -> None:
        import base64
        import urllib.request

        parts = urlsplit(self.management)
        request = urllib.request.Request(
            f"{parts.scheme}://{parts.hostname}:{parts.port}{path}",
            method=method,
            data=json.dumps(body or {}).encode(),
            headers={"content-type": "application/json"},
        )
        creds = f"{parts.username}:{parts.password}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(creds).decode())
        urllib.request.urlopen(request, timeout=30).close()


PERMISSIONS = {"configure": ".*", "write": ".*", "read": ".*"}


def vhost_case(args, k: int) -> tuple[dict, dict]:
    """N spread over k vhosts: the raw ceiling and one drainer on the same messages."""
    prefix = f"dlqbench-{uuid.uuid4().hex[:8]}"
    estate = Vhosts(args.broker_url, args.management_url, prefix, k)
    each = args.n // k
    try:
        print(f"{k} vhosts: filling {each:,} each", flush=True)
        estate.fill(args.n, args.size)
        ceiling = measured_ceiling(estate.targets(), each)
        print(f"  ceiling {ceiling['rate']:,.0f} msg/s", flush=True)
        estate.fill(args.n, args.size)
        reset_tables(args.database_url)
        pattern = f"{prefix}-*/{estate.parking}"
        result = run_drainers(1, pattern, args.database_url, args.broker_url)
        result.update(stored_rate(args.database_url, each * k))
        left = estate.depth()
        if result["stored"] != each * k or left:
            raise SystemExit(
                f"{k} vhosts: stored {result['stored']:,} of {each * k:,}, {left:,} left on"
                " the broker"
            )
        print(f"  drainer {result['rate']:,.0f} msg/s", flush=True)
    finally:
        estate.close()
    return ceiling, result


def use_cluster(args) -> list[int]:
    """--cluster: the run goes to the private cluster's three nodes; their beam.smp pids."""
    print(f"RabbitMQ {args.cluster} cluster: starting it unless it runs", flush=True)
    args.broker_url, args.management_url, pids = private_cluster.start(args.cluster)
    cpu_use.BROKER_PIDS.update(pids)  # the machine's other brokers are not this run's
    return pids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000, help="messages per run (50000)")
    parser.add_argument("--size", type=int, default=1024, help="body bytes (1024)")
    parser.add_argument("--skip-two", action="store_true", help="skip the two-drainer run")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DLQ_BENCH_DATABASE_URL", DEFAULT_DB),
        help=f"benchmark database, dropped and recreated ({DEFAULT_DB})",
    )
    parser.add_argument("--broker-url", default=os.environ.get("DLQ_BROKER_URL", DEFAULT_BROKER))
    parser.add_argument(
        "--management-url",
        default=os.environ.get("DLQ_MANAGEMENT_URL", DEFAULT_MANAGEMENT),
        help="the same broker's management API (RabbitMQ 4.0 here: http://...:15673)",
    )
    parser.add_argument(
        "--vhosts", type=int, default=0, help="also drain N spread over this many vhosts (20)"
    )
    parser.add_argument(
        "--prefetch", type=int, help="DLQ_DRAIN_PREFETCH for the drainers (default: product's)"
    )
    parser.add_argument(
        "--without-tallies",
        action="store_true",
        help="drop the queues' count triggers first, to measure what they cost",
    )
    parser.add_argument(
        "--cluster",
        nargs="?",
        const="3.10",
        choices=("3.10", "4.0"),
        help="on .ci/cluster's three nodes of this version (3.10), a quorum parking queue",
    )
    parser.add_argument("--ceiling-worker", metavar="TARGETS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ceiling_worker:
        ceiling_worker([tuple(t) for t in json.loads(args.ceiling_worker)], args.n)
        return
    if args.cluster and args.vhosts:
        parser.error("--vhosts is not measured on a --cluster")
    nodes = use_cluster(args) if args.cluster else []
    os.environ["DLQ_MANAGEMENT_URL"] = args.management_url  # the drainers' (drainer_env)
    if args.prefetch:
        PREFETCH_OVERRIDE.append(args.prefetch)

    sys.path.insert(0, str(ROOT))
    from dlq import compiled

    print(f"benchmark database {args.database_url}: recreating and migrating", flush=True)
    make_database(args.database_url, tallies=not args.without_tallies)
    queue_type = "quorum" if nodes else "classic"
    broker = Broker(args.broker_url, f"dlqbench-{uuid.uuid4().hex[:8]}", queue_type)
    memory = private_cluster.PeakRss(nodes)  # the cluster's nodes (none without --cluster)
    memory.start()
    try:
        print("ceiling: filling", flush=True)
        broker.fill(args.n, args.size)
        first_node = broker.amqp.nodes(args.broker_url)[0]  # where the drainer connects
        ceiling = measured_ceiling([(first_node, broker.parking)], args.n)
        print(f"  {ceiling['rate']:,.0f} msg/s", flush=True)
        one = drain_case("1 drainer", 1, broker, args)
        two = None if args.skip_two else drain_case("2 drainers", 2, broker, args)
    finally:
        broker.close()
        memory.stop()
    many = vhost_case(args, args.vhosts) if args.vhosts else None

    def line(name, result, rss, base=None):
        rate, base = result["rate"], base or ceiling
        ratio = f"{rate / base['rate']:.2f}" if rate else "-"
        per_msg = lambda seconds: f"{seconds / args.n * 1e6:.0f}"  # noqa: E731
        cpu = " + ".join(map(per_msg, result["cpu"]))
        print(
            f"{name:<18}{rate:>9,.0f}{ratio:>10}{result['wall']:>8.1f}{rss:>14}"
            f"{cpu:>14}{per_msg(result['broker_cpu']):>10}{per_msg(result['db_cpu']):>8}"
            f"{per_msg(result['machine_cpu']):>14}"
        )

    mib = lambda kib: f"{kib / 1024:.0f}"  # noqa: E731
    print()
    print(f"N = {args.n:,} messages, body {args.size} B, persistent, real x-death (expired, DLX)")
    print(
        f"drainer: product defaults DLQ_DRAIN_BATCH=1000"
        f" DLQ_DRAIN_PREFETCH={args.prefetch or 2000}"
        f" DLQ_DRAIN_FLUSH_MS=50, synchronous_commit={one['sync']}"
    )
    if nodes:
        print(
            f"cluster: RabbitMQ {args.cluster}, 3 nodes, a quorum parking queue; the nodes' RSS"
            f" (3 beam.smp summed): {mib(memory.rest)} MiB before filling,"
            f" {mib(memory.peak)} MiB at the peak of the run"
        )
    print(f"drainer: compiled modules {compiled.describe()} (setup.py)")
    print(f"ceiling: plain pika, prefetch {PREFETCH}, basic_ack(multiple=True) every {ACK_EVERY}")
    print(
        "msg/s: first to last delivery (ceiling), first to last stored batch (drainers);"
        " CPU us/msg: the process(es), whole run incl. start-up, RabbitMQ's, PostgreSQL's"
        " (bench/cpu.py), and the whole machine (all cores, other users included) during it"
    )
    print()
    print(
        f"{'':<18}{'msg/s':>9}{'x ceil':>10}{'wall s':>8}{'peak RSS MiB':>14}"
        f"{'proc CPU us':>14}{'broker':>10}{'db':>8}{'machine us':>14}"
    )
    line("raw pika ceiling", ceiling, "-")
    line("1 drainer", one, mib(one["peaks_kib"][0]))
    if two:
        line("2 drainers", two, " + ".join(map(mib, two["peaks_kib"])))
    if many:
        vceiling, vone = many
        print()
        print(f"{args.vhosts} vhosts x {args.n // args.vhosts:,} messages, one drainer process:")
        line("raw pika, in turn", vceiling, "-", vceiling)
        line(f"1 drainer, {args.vhosts} vh", vone, mib(vone["peaks_kib"][0]), vceiling)
        if vone["rate"] and one["rate"]:
            print(f"many-vhost drainer / single-vhost drainer: {vone['rate'] / one['rate']:.2f}")


if __name__ == "__main__":
    main()
