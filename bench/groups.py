#!/usr/bin/env python
"""Groups benchmark: server time of GET /api/v1/groups and the groups page at 1,000,000
stored messages in 5,000 failure groups (issue 27: p95 under 50 ms). Not a test.

    DATABASE_URL=postgres://root@127.0.0.1:5432/dlq_bench_groups .venv/bin/python bench/groups.py
        [--rows 1000000] [--groups 5000] [--requests 30] [--reseed] [--unfolded 60000]

1. Creates the database if it is missing and migrates it (migration 0033 installs the group
   tally triggers).
2. Seeds --rows messages with one INSERT ... SELECT (secondary indexes dropped first and
   rebuilt after, as bench/ui.py does), unless the table holds that many already: groups
   skewed (a few big, most small), each in its failed queue's parking queue, 70% parked;
   one group in ten has an owner, one in fifty a hold. The tally triggers fire for that
   statement as for a drainer's batch, so the tallies are what they would be folded.
3. Times, in-process with Django's test Client like bench/ui.py (1 warm-up, then
   --requests; p50 and p95): the first page, each filter, a deep page, one group, the page.
   Then again with --unfolded tally rows not yet folded (beat folds every 30 s; 60,000 is
   two hundred 500-message batches per second, each touching ten groups, for 30 s).

The database is the script's own: DATABASE_URL (PostgreSQL only) or --database-url,
default postgres://root@127.0.0.1:5432/dlq_bench_groups. --reseed empties its messages.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import ui  # bench/ui.py: the database, the clients and the timing

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = "postgres://root@127.0.0.1:5432/dlq_bench_groups"
TARGET_MS = 50

# One row per generate_series value g; k is its group (0..groups-1, skewed towards 0).
SEED_SQL = """
INSERT INTO dlq_message (
    queue, vhost, status, received_at, body, size, properties_json, headers_json,
    message_id, correlation_id, content_type, content_encoding, exchange, routing_key,
    original_exchange, original_routing_keys_json, original_routing_key, failed_queue,
    death_reason, death_count, first_death_at, exception_type, exception_message,
    exception_stacktrace, message_type, "group", replay_count, fingerprint, search_text,
    drain_note, trace_id)
SELECT q || '.dlq', '/', CASE WHEN r < 0.70 THEN 'parked' WHEN r < 0.90 THEN 'replayed'
        ELSE 'discarded' END,
    now() - (%(rows)s - g) * interval '2.5 seconds', convert_to('{"n": ' || g || '}', 'UTF8'),
    10, '{}', '{}', 'msg-' || g, '', 'application/json', '', q || '.dlx', q, q || '.events',
    '["' || q || '"]', q, q, 'rejected', 1, now(), exc,
    exc || ': failure ' || k || E'\nat Handler.run()', '', 'Bench.Type' || mod(k, 97),
    substr(md5('group-' || k), 1, 16), 0, encode(sha256(int8send(g)), 'hex'), '', '', ''
FROM (
    SELECT g, k, random() AS r, (%(queues)s::text[])[1 + mod(k, 20)] AS q,
        (%(exceptions)s::text[])[1 + mod(k, 30)] AS exc
    FROM (SELECT g, floor(random() ^ 2 * %(groups)s)::int AS k
          FROM generate_series(1, %(rows)s) g) picked
) built
"""
TRIAGE_SQL = """
INSERT INTO dlq_grouptriage ("group", owner_id, note, ticket_url, hold_until, updated_at)
SELECT substr(md5('group-' || k), 1, 16), CASE WHEN mod(k, 10) = 0 THEN %(owner)s END,
    'looked at it', '', CASE WHEN mod(k, 50) = 0 THEN now() + interval '7 days' END, now()
FROM generate_series(0, %(groups)s - 1) k WHERE mod(k, 10) = 0 OR mod(k, 50) = 0
"""
UNFOLDED_SQL = """
INSERT INTO dlq_grouptally ("group", vhost, queue, stored, parked, first_received_at,
    last_received_at)
SELECT substr(md5('group-' || k), 1, 16), '/', (%(queues)s::text[])[1 + mod(k, 20)] || '.dlq',
    0, 0, now(), now()
FROM (SELECT floor(random() ^ 2 * %(groups)s)::int AS k
      FROM generate_series(1, %(rows)s)) picked
"""


def seed(url: str, rows: int, groups: int) -> float:
    import psycopg

    started = time.perf_counter()
    with psycopg.connect(ui._pg_url(url), autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute("TRUNCATE dlq_message RESTART IDENTITY CASCADE")
        conn.execute("TRUNCATE dlq_grouptriage, dlq_grouptally")
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'dlq_message'"
            " AND indexname NOT IN (SELECT conname FROM pg_constraint)"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        conn.execute("SELECT setseed(0.27)")
        print(f"  inserting {rows:,} rows in {groups:,} groups", flush=True)
        conn.execute(SEED_SQL % {"rows": rows, "groups": groups, "queues": ui._array(ui.QUEUES),
                                 "exceptions": ui._array(ui.EXCEPTIONS)})  # fmt: skip
        for name, definition in indexes:
            print(f"  building {name}", flush=True)
            conn.execute(definition)
        print("  vacuum analyze", flush=True)
        conn.execute("VACUUM ANALYZE dlq_message")
        conn.execute("VACUUM ANALYZE dlq_grouptally")
    return time.perf_counter() - started


def triage(url: str, groups: int) -> str:
    """One group in ten owned by bench-owner, one in fifty on hold; the owner's name."""
    import psycopg
    from django.contrib.auth.models import User

    owner, _ = User.objects.get_or_create(username="bench-owner")
    with psycopg.connect(ui._pg_url(url), autocommit=True) as conn:
        conn.execute("TRUNCATE dlq_grouptriage")
        conn.execute(TRIAGE_SQL, {"owner": owner.pk, "groups": groups})
    return owner.username


def unfold(url: str, rows: int, groups: int) -> None:
    import psycopg

    with psycopg.connect(ui._pg_url(url), autocommit=True) as conn:
        conn.execute(UNFOLDED_SQL % {"queues": ui._array(ui.QUEUES), "groups": groups,
                                     "rows": rows})  # fmt: skip
        conn.execute("ANALYZE dlq_grouptally")


def cases(owner: str, some_group: str, groups: int) -> list[tuple[str, str, dict]]:
    """(name, path, query string)."""
    api = "/api/v1/groups"
    return [
        ("api first page", api, {}),
        ("api state=new", api, {"state": "new"}),
        ("api state=investigating", api, {"state": "investigating"}),
        ("api state=on_hold", api, {"state": "on_hold"}),
        ("api owner", api, {"owner": owner}),
        ("api queue", api, {"queue": "orders.dlq"}),
        ("api vhost + queue", api, {"vhost": "/", "queue": "analytics.dlq"}),
        ("api deep page", api, {"offset": max(groups - 100, 0)}),
        ("api limit=500", api, {"limit": 500}),
        ("api one group", f"{api}/{some_group}", {}),
        ("page /groups/", "/groups/", {}),
        ("page owner + state", "/groups/", {"owner": owner, "state": "investigating"}),
    ]


def measure(owner: str, groups: int, requests: int, label: str) -> list[tuple]:
    from django.db import connection

    from dlq.models import Message

    api, page = ui.viewer_clients()
    some_group = Message.objects.order_by("-id").values_list("group", flat=True).first()
    results = []
    for name, path, params in cases(owner, some_group, groups):
        client = page if path.startswith("/groups/") else api

        def call(client=client, path=path, params=params):
            return client.get(path, params).status_code

        result = ui.timed(call, requests)
        results.append((label, name, TARGET_MS, result))
    connection.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="messages (1000000)")
    parser.add_argument("--groups", type=int, default=5000, help="failure groups (5000)")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per case")
    parser.add_argument("--unfolded", type=int, default=60_000, help="tally rows not folded")
    parser.add_argument("--reseed", action="store_true", help="empty and seed again")
    env_url = os.environ.get("DATABASE_URL", "")
    parser.add_argument(
        "--database-url",
        default=env_url if env_url.startswith(("postgres://", "postgresql://")) else DEFAULT_DB,
        help=f"the benchmark's own PostgreSQL database (DATABASE_URL, else {DEFAULT_DB})",
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
    seeded = None
    if args.reseed or have != args.rows:
        print(f"seeding {args.rows:,} messages (the table holds {have:,})", flush=True)
        seeded = seed(args.database_url, args.rows, args.groups)
        print(f"  seeded in {seeded:.0f} s", flush=True)
    else:
        print(f"reusing the {have:,} stored messages (--reseed to start over)", flush=True)
    from dlq.groups import worklist

    worklist.fold()
    owner = triage(args.database_url, args.groups)
    print("measuring, tallies folded", flush=True)
    results = measure(owner, args.groups, args.requests, "folded")
    if args.unfolded:
        print(f"measuring, {args.unfolded:,} tally rows not folded yet", flush=True)
        unfold(args.database_url, args.unfolded, args.groups)
        results += measure(owner, args.groups, args.requests, "unfolded")
        worklist.fold()
    ui.report(results, args.rows, args.requests, seeded)


if __name__ == "__main__":
    main()
