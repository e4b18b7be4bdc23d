#!/usr/bin/env python
"""Search benchmark: the text search right after a burst of a million messages, and while
the product's worker and beat index behind it (not a test).

    .venv/bin/python bench/search.py [--rows 1000000] [--runs 1] [--watch 120] [--every 20]

1. Drops and recreates its own database (default postgres://root@127.0.0.1:5432/
   dlq_bench_search; --database-url or DLQ_BENCH_SEARCH_DATABASE_URL), migrates it, makes
   an operator with an API token, and starts the console's web server (runserver) on it.
2. Each run: empty tables, then ROWS parked messages as a burst leaves them: 20,000 real
   drainer rows (dlq/drain/store.py; 1 KiB bodies, one in 20,000 holding a rare term), then
   copies of them in SQL up to ROWS (so the rare term is in one row in 20,000). The search
   indexer has not run: nothing is indexed.
3. Right after: `GET /api/v1/messages?q=TERM` (the page size the list uses, 50) for the
   rare term and for a term no message holds (the most a search reads), --requests each;
   p50 and p95.
4. Then starts a Celery worker and beat as `make run` starts them (dlq_up), on a Celery
   queue of the benchmark's own, and every --every seconds for --watch seconds prints the
   indexer's progress (its watermark: every message at or below it has its entry) and the
   rare term's search time (one search a sample: each reads what is not indexed yet, on a
   core the indexer shares); after --watch, both terms, three searches each. The
   indexer's rate: the rows below its watermark (read every half second) over the time from
   the worker's start to the watermark's last move (the trigram index is written as it
   goes; a pass copies up to 100,000 rows in one transaction, so the watermark moves in
   steps).
5. Prints, per run, the searches right after and at the end of the watch, and the indexer's
   rows/s, against the issue's targets (< 500 ms during a burst, < 200 ms two minutes later,
   an indexer at least as fast as one drainer: bench/drain.py).

The burst is stored before the clock starts, which is the worst moment of a burst: during a
real one fewer rows are waiting for the indexer. The machine is shared: say what else ran.
"""

import argparse
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import replay as rb  # bench/replay.py: the database, the console's processes, the seeding

DEFAULT_DB = "postgres://root@127.0.0.1:5432/dlq_bench_search"
RARE = "quuxwobble"  # one message in 20,000
ABSENT = "zzqqxxjj"  # no message
SEED = 20_000
TARGET_BURST_MS, TARGET_LATER_MS = 500, 200


def body_with_rare_term(i: int, size: int) -> bytes:
    body = rb.body_of(i, size)
    return body[: size - 40] + f' "note": "{RARE}"'.encode() if i % SEED == 7 else body


def indexed_upto() -> int:
    from dlq.messages import search

    return search.indexed_upto()


def newest_id() -> int:
    from dlq.models import Message

    return Message.objects.order_by("-id").values_list("id", flat=True).first() or 0


def search_ms(api: rb.Api, term: str, requests: int) -> list[float]:
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        status, body = api.call("GET", f"/api/v1/messages?limit=50&q={quote(term)}")
        times.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise SystemExit(f"the search answered {status}: {body}")
    return times


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def fresh_burst(rows: int, park: str, work: str, size: int) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE dlq_message, dlq_searchentry, dlq_searchwatermark, dlq_job,"
            " dlq_pendingbatch RESTART IDENTITY CASCADE"
        )
    started = time.perf_counter()
    rb.seed(min(rows, SEED), size, park, work, body=body_with_rare_term)
    rb.grow(park, rows)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE dlq_message")
    print(f"  {rows:,} messages stored in {time.perf_counter() - started:.0f} s", flush=True)


class Watermark:
    """The indexer's watermark read every half second in a thread of its own (with its own
    database connection): when each of its moves was seen, from the worker's start."""

    def __init__(self):
        self.moves: list[tuple[float, int]] = []
        self.done = threading.Event()
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._poll, name="watermark", daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        from django.db import connection

        try:
            last = 0
            while not self.done.wait(0.5):
                upto = indexed_upto()
                if upto != last:
                    self.moves.append((time.monotonic() - self.started, upto))
                    last = upto
        finally:
            connection.close()

    def stop(self) -> float:
        """Rows indexed per second, from the worker's start to the last move seen."""
        self.done.set()
        self.thread.join()
        if not self.moves:
            return 0.0
        at, upto = self.moves[-1]
        return upto / at


def watch(api: rb.Api, args, total: int) -> list[dict]:
    """A sample every args.every s, for args.watch s."""
    samples, started = [], time.monotonic()
    while True:
        now = time.monotonic() - started
        upto = indexed_upto()
        last = now >= args.watch
        # One search a sample (each reads what is not indexed yet, seconds of a core that
        # the indexer shares); the absent term, the most a search reads, at the end.
        rare = search_ms(api, RARE, 1)[0]
        absent = statistics.median(search_ms(api, ABSENT, 3)) if last else float("nan")
        samples.append({"t": now, "upto": upto, "rare": rare, "absent": absent})
        print(f"  {now:6.0f} s  indexed {upto:>9,}  waiting {total - upto:>9,}"
              f"  rare {rare:8.0f} ms  absent {absent:8.0f} ms", flush=True)  # fmt: skip
        if last:
            return samples
        time.sleep(max(0.0, args.every - (time.monotonic() - started - now)))


def bench(args, logs: Path) -> list[dict]:
    base = dict(os.environ)
    env = rb.child_env(base, args)
    print(f"benchmark database {args.database_url}: recreating and migrating", flush=True)
    rb.make_database(args.database_url, env)
    rb.setup_django(env)
    token = rb.operator_token()
    prefix = f"dlqbench-search-{uuid.uuid4().hex[:8]}"
    celery_queue = f"{prefix}.celery"
    env = rb.child_env(base, args, celery_queue)
    port = rb.free_port()
    server = rb.Child("server", [sys.executable, "manage.py", "runserver",
                                 f"127.0.0.1:{port}", "--noreload"], env, logs)  # fmt: skip
    api = rb.Api(port, token)
    results = []
    try:
        rb.wait_until(server, api.healthy, "answer on /healthz")
        for run in range(1, args.runs + 1):
            print(f"run {run}: a burst of {args.rows:,} stored, nothing indexed", flush=True)
            fresh_burst(args.rows, f"{prefix}.dlq", f"{prefix}.work", args.size)
            total = newest_id()
            rare = search_ms(api, RARE, args.requests)
            absent = search_ms(api, ABSENT, args.requests)
            print(f"  right after: rare term p50 {statistics.median(rare):,.0f} ms,"
                  f" p95 {p95(rare):,.0f} ms; absent term p50 {statistics.median(absent):,.0f}"
                  f" ms, p95 {p95(absent):,.0f} ms", flush=True)  # fmt: skip
            print(f"run {run}: worker and beat started; watching {args.watch} s", flush=True)
            workers = start_worker_and_beat(env, celery_queue, logs, run)
            watermark = Watermark()
            try:
                samples = watch(api, args, total)
            finally:
                rate = watermark.stop()
                for child in workers:
                    child.stop()
            results.append({"rare": p95(rare), "absent": p95(absent), "rate": rate,
                            "later_rare": samples[-1]["rare"],
                            "later_absent": samples[-1]["absent"],
                            "waiting": total - samples[-1]["upto"]})  # fmt: skip
    finally:
        server.stop()
        rb.cleanup(None, args.broker_url, [celery_queue], [celery_queue])
    return results


def start_worker_and_beat(env: dict, celery_queue: str, logs: Path, run: int) -> list:
    worker = rb.Child(f"worker-{run}", [sys.executable, "-m", "celery", *rb.WORKER_ARGS,
                                        "-Q", celery_queue, "-n", f"{celery_queue}@%h"],
                      env, logs)  # fmt: skip
    beat = rb.Child(f"beat-{run}", [sys.executable, "-m", "celery", "-A", "console", "beat",
                                    "-l", "info", "-s", str(logs / f"beat-{run}")],
                    env, logs)  # fmt: skip
    return [worker, beat]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="the burst (1000000)")
    parser.add_argument("--size", type=int, default=1024, help="body bytes (1024)")
    parser.add_argument("--runs", type=int, default=1, help="bursts (1)")
    parser.add_argument("--requests", type=int, default=10, help="timed searches right after")
    parser.add_argument("--watch", type=int, default=120, help="seconds of worker and beat")
    parser.add_argument("--every", type=int, default=20, help="seconds between samples")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DLQ_BENCH_SEARCH_DATABASE_URL", DEFAULT_DB),
        help=f"benchmark database, dropped and recreated ({DEFAULT_DB})",
    )
    parser.add_argument("--broker-url", default=os.environ.get("DLQ_BROKER_URL", rb.DEFAULT_BROKER))
    parser.add_argument(
        "--management-url", default=os.environ.get("DLQ_MANAGEMENT_URL", rb.DEFAULT_MANAGEMENT)
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="dlq-bench-search-") as logs:
        results = bench(args, Path(logs))

    print()
    print(f"burst = {args.rows:,} messages of {args.size} B stored, nothing indexed; searches"
          f" through GET /api/v1/messages?limit=50&q=, '{RARE}' in 1 row of {SEED:,},"
          f" '{ABSENT}' in none; later = after {args.watch} s of worker and beat")  # fmt: skip
    print(f"{'run':<8}{'right after p95 ms':>20}{'(absent)':>10}{'later ms':>10}{'(absent)':>10}"
          f"{'waiting':>10}{'indexer rows/s':>16}")  # fmt: skip

    def row(label: str, r: dict) -> None:
        print(f"{label:<8}{r['rare']:>20,.0f}{r['absent']:>10,.0f}{r['later_rare']:>10,.0f}"
              f"{r['later_absent']:>10,.0f}{r['waiting']:>10,.0f}{r['rate']:>16,.0f}")  # fmt: skip

    for run, r in enumerate(results, 1):
        row(str(run), r)
    if len(results) > 1:
        row("median", {k: statistics.median(r[k] for r in results) for k in results[0]})
    worst = {k: statistics.median(r[k] for r in results) for k in results[0]}
    burst = max(worst["rare"], worst["absent"])
    later = max(worst["later_rare"], worst["later_absent"])
    print(f"targets: right after < {TARGET_BURST_MS} ms: {burst:,.0f} ms,"
          f" {'met' if burst < TARGET_BURST_MS else 'NOT met'}; later < {TARGET_LATER_MS} ms:"
          f" {later:,.0f} ms, {'met' if later < TARGET_LATER_MS else 'NOT met'}; indexer"
          f" {worst['rate']:,.0f} rows/s against one drainer's rate (bench/drain.py)")  # fmt: skip


if __name__ == "__main__":
    main()
