#!/usr/bin/env python
"""Export and import benchmark: the rate of GET /api/v1/messages/export over a million
stored messages and the memory of the process that serves it, then the rate and memory of
`manage.py dlq_import` (not a test).

    .venv/bin/python bench/export.py [--rows 1000000] [--size 1024] [--import-lines 100000]

1. Drops and recreates its own database (default postgres://root@127.0.0.1:5432/
   dlq_bench_export; --database-url or DLQ_BENCH_EXPORT_DATABASE_URL), migrates it, makes
   an operator with an API token, and starts the console's web server (runserver, one
   process) on it.
2. Stores ROWS parked messages: 20,000 real drainer rows (bench/replay.py's seed: 1 KiB JSON
   bodies, a real x-death, typed headers), copied in SQL up to ROWS.
3. A first export of nothing and a message's detail (modules loaded), then the export of
   the whole queue, read as a client reads a download (and thrown away, but for the first
   --import-lines lines, kept in a file): lines/s and MB/s; the server's resident memory
   sampled every half second, printed at each tenth of the export, and its peak (VmHWM),
   against its memory before the export. Bounded: the peak does not grow with ROWS.
4. `manage.py dlq_import FILE --queue Q` of the kept lines, in a process of its own: lines/s
   and its peak resident memory (wait4's ru_maxrss).

The machine is shared: say what else ran.
"""

import argparse
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import replay as rb  # bench/replay.py: the database, the console's processes, the seeding

DEFAULT_DB = "postgres://root@127.0.0.1:5432/dlq_bench_export"
SEED = 20_000


def kib(field: str, pid: int) -> int:
    """A /proc/PID/status memory field (VmRSS, VmHWM) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


class Sampler:
    """The server's resident memory every half second, in a thread of its own."""

    def __init__(self, pid: int):
        self.pid, self.samples, self.done = pid, [], threading.Event()
        self.thread = threading.Thread(target=self._run, name="rss", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.5):
            self.samples.append(kib("VmRSS", self.pid))

    def stop(self) -> list[int]:
        self.done.set()
        self.thread.join()
        return self.samples


def export(port: int, token: str, query: str, keep: int, into: Path) -> tuple[int, int, float]:
    """(lines, bytes, seconds) of one export, the first `keep` lines written to `into`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    started = time.perf_counter()
    conn.request("GET", f"/api/v1/messages/export?{query}",
                 headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    response = conn.getresponse()
    if response.status != 200:
        raise SystemExit(f"the export answered {response.status}: {response.read()[:500]!r}")
    lines = size = 0
    with open(into, "wb") as kept:
        for line in iter(response.readline, b""):
            lines += 1
            size += len(line)
            if lines <= keep:
                kept.write(line)
    conn.close()
    return lines, size, time.perf_counter() - started


def import_file(path: Path, queue: str, env: dict) -> tuple[float, int, str]:
    """(seconds, peak resident KiB, output) of dlq_import in a process of its own."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "manage.py", "dlq_import", str(path), "--queue", queue],
        cwd=rb.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    out = child.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(child.pid, 0)
    took = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"dlq_import failed:\n{out[-3000:]}")
    return took, usage.ru_maxrss, out.strip()


def seed(rows: int, park: str, work: str, size: int) -> None:
    from django.db import connection

    started = time.perf_counter()
    rb.seed(min(rows, SEED), size, park, work)
    rb.grow(park, rows)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE dlq_message")
    print(f"  {rows:,} messages stored in {time.perf_counter() - started:.0f} s", flush=True)


def bench(args, logs: Path) -> None:
    env = rb.child_env(dict(os.environ), args)
    print(f"benchmark database {args.database_url}: recreating and migrating", flush=True)
    rb.make_database(args.database_url, env)
    rb.setup_django(env)
    token = rb.operator_token()
    prefix = f"dlqbench-export-{uuid.uuid4().hex[:8]}"
    park, work = f"{prefix}.dlq", f"{prefix}.work"
    seed(args.rows, park, work, args.size)
    port = rb.free_port()
    server = rb.Child("server", [sys.executable, "manage.py", "runserver",
                                 f"127.0.0.1:{port}", "--noreload"], env, logs)  # fmt: skip
    try:
        rb.wait_until(server, rb.Api(port, token).healthy, "answer on /healthz")
        pid = server.proc.pid
        kept = logs / "export.ndjson"
        export(port, token, f"queue={prefix}.none", 0, kept)  # warm-up: modules, connection
        rb.Api(port, token).call("GET", "/api/v1/messages/1")  # and the detail's schema
        before = kib("VmRSS", pid)
        sampler = Sampler(pid)
        lines, size, took = export(port, token, f"queue={park}", args.import_lines, kept)
        samples = sampler.stop()
        peak = kib("VmHWM", pid)
    finally:
        server.stop()
    if lines != args.rows:
        raise SystemExit(f"exported {lines:,} lines of {args.rows:,}")
    print(f"export: {lines:,} messages, {size / 2**20:,.0f} MiB in {took:.1f} s:"
          f" {lines / took:,.0f} messages/s, {size / 2**20 / took:,.1f} MiB/s")  # fmt: skip
    tenths = [samples[min(len(samples) - 1, len(samples) * k // 10)] for k in range(1, 11)]
    print(f"  server RSS before {before / 1024:,.0f} MiB; at each tenth of the export:"
          f" {', '.join(f'{s / 1024:,.0f}' for s in tenths)} MiB; peak (VmHWM)"
          f" {peak / 1024:,.0f} MiB")  # fmt: skip
    took, peak, said = import_file(kept, f"{prefix}.imported", env)
    n = min(args.import_lines, lines)
    print(f"import: {n:,} lines in {took:.1f} s (process start included):"
          f" {n / took:,.0f} messages/s; peak RSS {peak / 1024:,.0f} MiB")  # fmt: skip
    print(f"  {said}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="messages (1000000)")
    parser.add_argument("--size", type=int, default=1024, help="body bytes (1024)")
    parser.add_argument("--import-lines", type=int, default=100_000,
                        help="lines of the export imported again (100000)")  # fmt: skip
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DLQ_BENCH_EXPORT_DATABASE_URL", DEFAULT_DB),
        help=f"benchmark database, dropped and recreated ({DEFAULT_DB})",
    )
    parser.add_argument("--broker-url", default=os.environ.get("DLQ_BROKER_URL", rb.DEFAULT_BROKER))
    parser.add_argument(
        "--management-url", default=os.environ.get("DLQ_MANAGEMENT_URL", rb.DEFAULT_MANAGEMENT)
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="dlq-bench-export-") as logs:
        bench(args, Path(logs))


if __name__ == "__main__":
    main()
