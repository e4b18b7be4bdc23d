#!/usr/bin/env python
"""Redrive benchmark: the database side of a policy's scheduler tick at 1,000,000 stored
messages with 10,000 due (issue 28: milliseconds, not a scan). Not a test.

    DATABASE_URL=postgres://root@127.0.0.1:5432/dlq_bench_redrive .venv/bin/python bench/redrive.py
        [--rows 1000000] [--due 10000] [--waiting 100000] [--ticks 30] [--reseed]

1. Seeds --rows messages as bench/groups.py does (unless the table holds that many).
2. Makes two policies: the one measured, and another (tripped) whose --waiting rows sit in
   the same index; gives the measured one --due rows due now and --waiting rows due later.
3. Times --ticks ticks (p50, p95) without the broker: matching arrivals (none new), the trip
   check, and taking one tick's batch (PER_TICK rows, FOR UPDATE SKIP LOCKED, leased), each
   in a transaction rolled back so every tick finds the same rows. Publishing the batch is
   the broker's time, which bench/replay.py measures.
"""

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import groups  # bench/groups.py: its seed
import ui

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = "postgres://root@127.0.0.1:5432/dlq_bench_redrive"

DUE_SQL = """
INSERT INTO dlq_redrivedue (message_id, policy_id, attempt, next_at, exhausted)
SELECT id, %(policy)s, 0, now() + %(offset)s * interval '1 second', false
FROM dlq_message WHERE status = 'parked' AND id > %(after)s ORDER BY id LIMIT %(count)s
RETURNING message_id
"""


def policies(due: int, waiting: int):
    from django.db import connection

    from dlq.models.redrive import RedriveDue, RedriveMark, RedrivePolicy
    from dlq.redrive import matching

    RedrivePolicy.objects.all().delete()
    now = datetime.now(UTC)
    common = {"target": "failed_queue", "delay_seconds": 30, "max_attempts": 3, "armed_at": now}
    other = RedrivePolicy.objects.create(name="other", match={"queue": "orders.dlq"},
                                         state="tripped", **common)  # fmt: skip
    measured = RedrivePolicy.objects.create(name="measured", match={"queue": "payments.dlq"},
                                            **common)  # fmt: skip
    after = 0
    with connection.cursor() as cursor:
        for policy, count, offset in ((measured, due, -60), (measured, waiting, 3600),
                                      (other, waiting, -60)):  # fmt: skip
            cursor.execute(DUE_SQL, {"policy": policy.pk, "offset": offset, "after": after,
                                     "count": count})  # fmt: skip
            after = max(row[0] for row in cursor.fetchall())
        cursor.execute("ANALYZE dlq_redrivedue")
    newest = connection.cursor()
    newest.execute("SELECT max(id) FROM dlq_message")
    RedriveMark.objects.update_or_create(pk=matching.MARK, defaults={"upto": newest.fetchone()[0]})
    print(f"  {RedriveDue.objects.count():,} rows in the due index", flush=True)
    return measured


def measure(policy, ticks: int) -> list[float]:
    from django.db import transaction

    from dlq.redrive import matching, scheduler, tripping

    timings = []
    for _ in range(ticks + 1):
        started = time.perf_counter()
        with transaction.atomic():
            matching.match_arrivals()
            tripping.check()
            taken = scheduler._take(policy, datetime.now(UTC) + timedelta(seconds=1))
            transaction.set_rollback(True)
        timings.append((time.perf_counter() - started) * 1000)
        assert len(taken) == scheduler.PER_TICK, len(taken)
    return timings[1:]  # the first warms the caches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--due", type=int, default=10_000)
    parser.add_argument("--waiting", type=int, default=100_000)
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--reseed", action="store_true")
    env_url = os.environ.get("DATABASE_URL", "")
    parser.add_argument(
        "--database-url",
        default=env_url if env_url.startswith(("postgres://", "postgresql://")) else DEFAULT_DB,
    )
    args = parser.parse_args()

    import psycopg

    ui.ensure_database(args.database_url)
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    print(f"benchmark database {args.database_url}: migrating", flush=True)
    call_command("migrate", verbosity=0)
    with psycopg.connect(ui._pg_url(args.database_url)) as conn:
        have = ui.stored_rows(conn)
    if args.reseed or have != args.rows:
        print(f"seeding {args.rows:,} messages (the table holds {have:,})", flush=True)
        print(f"  seeded in {groups.seed(args.database_url, args.rows, 5000):.0f} s", flush=True)
    policy = policies(args.due, args.waiting)
    timings = measure(policy, args.ticks)
    p50 = statistics.median(timings)
    p95 = statistics.quantiles(timings, n=20)[-1]
    print(f"\n{args.rows:,} stored messages, {args.due:,} due of {policy.name!r} and"
          f" {args.waiting:,} waiting later, {args.waiting:,} of a tripped policy:"
          f" one tick's database side (match, trip check, take {len(timings) and 500} due)"
          f" p50 {p50:.1f} ms, p95 {p95:.1f} ms over {args.ticks} ticks")  # fmt: skip


if __name__ == "__main__":
    main()
