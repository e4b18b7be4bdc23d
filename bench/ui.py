#!/usr/bin/env python
"""UI benchmark: server time of the message list at 1,000,000 stored messages (not a test).

    DATABASE_URL=postgres://root@127.0.0.1:5432/dlq_bench .venv/bin/python bench/ui.py
        [--rows 1000000] [--requests 30] [--reseed] [--index]

1. Creates the database if it is missing and migrates it (new indexes are built here).
2. Seeds --rows messages with bulk SQL (INSERT ... SELECT over generate_series; secondary
   indexes are dropped first and rebuilt after, as a restore would), unless the table
   already holds that many: a seeded database is reused, --reseed starts over. A million
   rows take about a minute to insert and a few to index on a shared 2-core machine.
   Variety: 20 queues (skewed), four statuses, four death reasons, 30 exception types,
   ~600 failure groups, bodies of 300-1000 bytes of JSON-like text built from ~1,500
   words, one rare term in 25 rows and common words in a third of them.
3. With --index (or after seeding), runs the search indexer (dlq/search.py) until
   every message has its search entry, the trigram index dropped first and rebuilt after
   (a million entries: about 20 s to copy, four minutes to index), and prints the rows/s of
   both together: a bulk build is not much faster per row than the indexer's own passes
   (4,200-7,800 rows/s here, against about 4,600).
   Without it, messages the indexer has not reached are searched in the table itself
   (exact, but slow for a large lag).
4. Times each case in-process with Django's test Client (middleware, view, query and
   rendering; no network): 1 warm-up request, then --requests timed ones; p50 and p95.
   The API is `GET /api/v1/messages` with a viewer's bearer token; the page is
   `GET /messages/` logged in as a viewer (a page that is not built yet answers 501 and is
   reported as such). `queries` rows time queries.page(queries.filter_messages(...)), the
   call the page makes, without HTTP. Then the pages opened from the list: the newest
   message's page, its group's page and the groups page.

The database is the script's own: DATABASE_URL (PostgreSQL only) or --database-url,
default postgres://root@127.0.0.1:5432/dlq_bench_ui. --reseed empties its message table.
"""

import argparse
import logging
import os
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = "postgres://root@127.0.0.1:5432/dlq_bench_ui"
LIST_MS, SEARCH_MS = 50, 500  # issue 13: list pages and the queue overview under 50 ms
BUDGET_S = 30  # per case: the unindexed baseline takes seconds per request
RARE_TERM, COMMON_TERM, OLD_TERM = "zanzibar-quokka", "timeout", '"order_id": 40'
QUEUES = [
    "orders", "payments", "invoices", "shipping", "emails", "sms", "billing", "refunds",
    "inventory", "search-index", "audit-log", "webhooks", "reports", "exports", "imports",
    "pricing", "loyalty", "fraud-check", "notifications", "analytics",
]  # fmt: skip
EXCEPTIONS = [
    "java.net.SocketTimeoutException", "java.lang.NullPointerException",
    "java.lang.IllegalStateException", "java.lang.IllegalArgumentException",
    "org.springframework.dao.DataIntegrityViolationException",
    "org.springframework.amqp.AmqpRejectAndDontRequeueException",
    "com.fasterxml.jackson.core.JsonParseException", "javax.validation.ValidationException",
    "System.TimeoutException", "System.InvalidOperationException",
    "System.ArgumentNullException", "MassTransit.RequestTimeoutException",
    "ValueError", "KeyError", "TypeError", "ConnectionError", "TimeoutError",
    "psycopg.errors.UniqueViolation", "requests.exceptions.HTTPError",
    "celery.exceptions.MaxRetriesExceededError", "PaymentDeclined", "AddressInvalid",
    "StockUnavailable", "RateLimited", "UpstreamUnavailable", "SchemaMismatch",
    "DuplicateOrder", "CurrencyUnsupported", "TemplateMissing", "QuotaExceeded",
]  # fmt: skip
WORDS = [
    "timeout", "retry", "failed", "order", "customer", "payment", "invoice", "amount",
    "currency", "status", "pending", "accepted", "rejected", "shipment", "address", "street",
    "city", "country", "postal", "warehouse", "stock", "item", "quantity", "price", "discount",
    "tax", "total", "account", "user", "session", "token", "expired", "invalid", "missing",
    "duplicate", "unknown", "service", "upstream", "gateway", "connection", "refused", "reset",
    "database", "query", "constraint", "violation", "schema", "version", "field", "value",
    "null", "empty", "error", "warning", "exception", "handler", "consumer", "producer",
    "queue", "exchange", "routing", "message", "event", "created", "updated", "deleted",
]  # fmt: skip


def syllable_words(n: int, rng: random.Random) -> list[str]:
    """Made-up words, so bodies have a vocabulary like real ones rather than 100 words."""
    parts = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "xi", "ze", "bra", "cle", "dro",
             "fli", "gra", "plu", "spe", "tri", "qua", "wen"]  # fmt: skip
    return ["".join(rng.choice(parts) for _ in range(rng.randint(2, 4))) for _ in range(n)]


def paragraphs(count: int) -> list[str]:
    """Texts of 250-900 characters; a third of them hold COMMON_TERM."""
    rng = random.Random(42)
    vocab = WORDS + syllable_words(1500, rng)
    out = []
    for i in range(count):
        words, size = [], rng.randint(250, 900)
        while sum(map(len, words)) + len(words) < size:
            words.append(rng.choice(vocab))
        if i % 3 == 0:
            words.insert(rng.randrange(len(words)), COMMON_TERM)
        elif COMMON_TERM in words:
            words = [w for w in words if w != COMMON_TERM]
        out.append(" ".join(words))
    return out


# One row per generate_series value g; r1..r5 are uniform random numbers.
SEED_SQL = """
INSERT INTO dlq_message (
    queue, vhost, status, received_at, body, size, properties_json, headers_json,
    message_id, correlation_id, content_type, content_encoding, exchange, routing_key,
    original_exchange, original_routing_keys_json, original_routing_key, failed_queue,
    death_reason, death_count, delivery_count, first_death_at, exception_type,
    exception_message, exception_stacktrace, message_type, "group", replay_count,
    fingerprint, search_text, drain_note)
SELECT q || '.dlq', '/', status, at, convert_to(body, 'UTF8'), octet_length(body),
    '{"content_type": "application/json", "delivery_mode": 2}', headers,
    'msg-' || g, 'corr-' || mod(g, 50000), 'application/json', '', q || '.dlx', rk,
    q || '.events', '["' || rk || '"]', rk, q, reason, 1, NULL, at, exc,
    CASE WHEN exc = '' THEN '' ELSE exc || ': ' || left(para, 60) END,
    '', '', substr(md5(q || exc || floor(r4 * r4 * 25)::text), 1, 16), 0,
    encode(sha256(int8send(g)), 'hex'),
    lower(body || E'\ntenant=tenant-' || mod(g, 17) || E'\nx-first-death-queue=' || q
        || E'\nx-first-death-reason=' || reason || E'\nx-first-death-exchange=' || q
        || '.events'),  -- folded, as the drainer stores it (ingest.fold)
    ''
FROM (
    SELECT g, at, q, rk, para, status, reason, exc, r4,
        '{"type": "' || rk || '"}' AS headers,
        '{"order_id": ' || g || ', "customer": "c-' || mod(g, 9973) || '", "sku": "SKU-'
            || mod(g, 131) || '", "note": "' || para
            || CASE WHEN mod(g, 40000) = 17 THEN ' %(rare)s' ELSE '' END || '"}' AS body
    FROM (
        SELECT g, r4,
            now() - (%(rows)s - g) * interval '2.5 seconds' AS at,
            (%(queues)s::text[])[1 + floor(r1 * r1 * 20)::int] AS q,
            (ARRAY['created', 'updated', 'cancelled', 'paid', 'shipped'])[1 + mod(g, 5)]
                AS rk,
            bench_para.t AS para,
            CASE WHEN r2 < 0.70 THEN 'parked' WHEN r2 < 0.90 THEN 'replayed'
                 WHEN r2 < 0.99 THEN 'discarded' ELSE 'replaying' END AS status,
            CASE WHEN r3 < 0.80 THEN 'rejected' WHEN r3 < 0.95 THEN 'expired'
                 WHEN r3 < 0.99 THEN 'maxlen' ELSE 'delivery_limit' END AS reason,
            CASE WHEN r5 < 0.2 THEN ''
                 ELSE (%(exceptions)s::text[])[1 + floor(r5 * r5 * 30)::int] END AS exc
        FROM (SELECT g, random() r1, random() r2, random() r3, random() r4, random() r5
              FROM generate_series(1, %(rows)s) g) rand
        JOIN bench_para ON bench_para.i = mod(g, %(paras)s)
    ) picked
) built
"""


def _pg_url(url: str, dbname: str | None = None) -> str:
    parts = urlsplit(url)
    path = f"/{dbname}" if dbname is not None else parts.path
    return urlunsplit(("postgresql", parts.netloc, path, parts.query, ""))


def ensure_database(url: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    if not name or not name.replace("_", "").isalnum():
        raise SystemExit(f"refusing an odd benchmark database name: {name!r}")
    with psycopg.connect(_pg_url(url, "postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def stored_rows(conn) -> int:
    return conn.execute("SELECT count(*) FROM dlq_message").fetchone()[0]


def seed(url: str, rows: int) -> float:
    """Empty the message table and fill it with `rows` messages; the seconds it took."""
    import psycopg

    started = time.perf_counter()
    texts = paragraphs(2000)
    with psycopg.connect(_pg_url(url), autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute("TRUNCATE dlq_message RESTART IDENTITY CASCADE")
        conn.execute("TRUNCATE dlq_drainedqueue")
        conn.execute("UPDATE dlq_searchwatermark SET upto = 0, seen_upto = NULL, holders = '[]'")
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'dlq_message'"
            " AND indexname NOT IN (SELECT conname FROM pg_constraint)"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        conn.execute("CREATE TEMP TABLE bench_para (i int PRIMARY KEY, t text)")
        with conn.cursor().copy("COPY bench_para (i, t) FROM STDIN") as copy:
            for i, text in enumerate(texts):
                copy.write_row((i, text))
        conn.execute("SELECT setseed(0.42)")
        print(f"  inserting {rows:,} rows", flush=True)
        sql = SEED_SQL % {"rows": rows, "queues": _array(QUEUES), "paras": len(texts),
                          "exceptions": _array(EXCEPTIONS), "rare": RARE_TERM}  # fmt: skip
        conn.execute(sql)
        for name, definition in indexes:
            print(f"  building {name}", flush=True)
            conn.execute(definition)
        conn.execute(
            "INSERT INTO dlq_drainedqueue (vhost, name, queue_type, first_seen_at, last_seen_at)"
            " SELECT '/', q || '.dlq', 'classic', now(), now() FROM unnest(%s::text[]) q",
            [QUEUES],
        )
        print("  vacuum analyze", flush=True)
        conn.execute("VACUUM ANALYZE dlq_message")
    return time.perf_counter() - started


def _array(values: list[str]) -> str:
    return "ARRAY[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def index_all(url: str) -> None:
    """Run the search indexer until it has caught up, as a bulk load: without the trigram
    index, built after (search.BATCH rows a statement, as in production)."""
    import psycopg

    from dlq.messages import search

    with psycopg.connect(_pg_url(url), autocommit=True) as conn:
        definition = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'search_entry_trgm'"
        ).fetchone()
        conn.execute("DROP INDEX IF EXISTS search_entry_trgm")
        started = time.perf_counter()
        copied = search.catch_up()
        took = time.perf_counter() - started
        print(f"  copied {copied:,} entries in {took:.1f} s, the trigram index dropped"
              f" ({copied / took:,.0f} rows/s: not the indexer's rate, see below)")  # fmt: skip
        if definition:
            started = time.perf_counter()
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute(definition[0])
            built = time.perf_counter() - started
            conn.execute("VACUUM ANALYZE dlq_searchentry")
            print(f"  trigram index built in {built:.0f} s; copy and build together:"
                  f" {copied / (took + built):,.0f} rows/s", flush=True)  # fmt: skip


# --- measuring ------------------------------------------------------------------------


def viewer_clients():
    from django.contrib.auth.models import Group, User
    from django.test import Client

    from dlq.accounts.tokens import create_token

    user, _ = User.objects.get_or_create(username="bench-viewer")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    token = create_token(user, "bench")
    api = Client(headers={"Authorization": f"Bearer {token}"}, SERVER_NAME="localhost")
    page = Client(SERVER_NAME="localhost")
    page.force_login(user)
    return api, page


def timed(call, requests: int) -> dict:
    if (status := call()) != 200:  # one warm-up request
        return {"status": status}  # not built yet: nothing to time
    times, status, budget = [], None, time.perf_counter() + BUDGET_S
    for _ in range(requests):  # a slow case stops at its time budget (3 samples at least)
        started = time.perf_counter()
        status = call()
        times.append((time.perf_counter() - started) * 1000)
        if len(times) >= 3 and time.perf_counter() > budget:
            break
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return {"p50": statistics.median(times), "p95": p95, "status": status, "n": len(times)}


def cases(deep_cursor: str) -> list[tuple[str, dict, int]]:
    """(name, query string, target ms); every filter of the list is among them."""
    range_ = {"received_after": "__AFTER__", "received_before": "__BEFORE__"}
    return [
        ("first page", {}, LIST_MS),
        ("queue + status", {"queue": "fraud-check.dlq", "status": "parked"}, LIST_MS),
        ("queue + rare status", {"queue": "analytics.dlq", "status": "replaying"}, LIST_MS),
        ("group", {"group": "__GROUP__"}, LIST_MS),
        ("reason (1%)", {"reason": "delivery_limit"}, LIST_MS),
        ("exception type", {"exception_type": EXCEPTIONS[-1]}, LIST_MS),
        ("exchange", {"exchange": "analytics.events"}, LIST_MS),
        ("routing key", {"routing_key": "shipped"}, LIST_MS),
        ("received range", range_, LIST_MS),
        ("received before (old, open)", {"received_before": "__OLD__"}, LIST_MS),
        ("deep page", {"cursor": deep_cursor}, LIST_MS),
        ("deep + queue", {"cursor": deep_cursor, "queue": "orders.dlq"}, LIST_MS),
        (f"search rare '{RARE_TERM}'", {"q": RARE_TERM}, SEARCH_MS),
        (f"search common '{COMMON_TERM}'", {"q": COMMON_TERM}, SEARCH_MS),
        ("search + queue", {"q": "duplicate", "queue": "refunds.dlq"}, SEARCH_MS),
        # Only in rows 400,000-409,999 (and a few older), of trigrams every body has.
        ("search old rows only", {"q": OLD_TERM}, SEARCH_MS),
        ("search deep", {"q": COMMON_TERM, "cursor": deep_cursor}, SEARCH_MS),
    ]


def callers(api, page, params: dict, filters: dict) -> list[tuple]:
    """The three ways a case is timed: the API, the page, and the page's queries alone."""
    from dlq.messages import queries

    def via_api():
        response = api.get("/api/v1/messages", params)
        assert response.status_code == 200, response.content[:300]
        return response.status_code

    def via_page():
        return page.get("/messages/", params).status_code

    def via_queries():
        queries.page(queries.filter_messages(filters), params.get("cursor"), 50)
        return 200

    return [("api", via_api), ("page", via_page), ("queries", via_queries)]


def other_pages(newest: dict) -> list[tuple[str, str]]:
    """The pages an operator opens from the list: a message, its group, the groups."""
    return [
        ("message page", f"/messages/{newest['id']}/"),
        ("group page", f"/groups/{newest['group']}/"),
        ("groups page (last 24 h)", "/groups/"),
    ]


def measure(args) -> list[tuple]:
    from datetime import datetime, timedelta

    from django.db import connection

    from dlq.messages import queries
    from dlq.models import Message

    api, page = viewer_clients()
    logging.getLogger("django.request").setLevel(logging.CRITICAL)  # a 501 is reported below
    newest = Message.objects.order_by("-id").values("id", "received_at", "group").first()
    deep_cursor = queries.encode_cursor(max(newest["id"] // 10, 2))
    after = newest["received_at"] - timedelta(days=12)
    fill = {"__GROUP__": newest["group"], "__AFTER__": after.isoformat(),
            "__BEFORE__": (after + timedelta(days=1)).isoformat(),
            "__OLD__": (newest["received_at"] - timedelta(days=20)).isoformat()}  # fmt: skip
    results = []
    for name, params, target in cases(deep_cursor):
        params = {k: fill.get(v, v) for k, v in params.items()}
        print(f"  {name}", flush=True)
        filters = {k: v for k, v in params.items() if k != "cursor"}
        for key in ("received_after", "received_before"):  # queries take datetimes
            if key in filters:
                filters[key] = datetime.fromisoformat(filters[key])
        for kind, call in callers(api, page, params, filters):
            results.append((kind, name, target, timed(call, args.requests)))
    overview = timed(lambda: api.get("/api/v1/queues").status_code, args.requests)
    results.append(("api", "queues overview", LIST_MS, overview))
    for name, path in other_pages(newest):
        print(f"  {name}", flush=True)
        results.append(
            (
                "page",
                name,
                LIST_MS,
                timed(lambda path=path: page.get(path).status_code, args.requests),
            )
        )
    connection.close()
    return results


def report(results: list[tuple], rows: int, requests: int, seeded: float | None) -> None:
    print()
    print(f"{rows:,} stored messages; p50/p95 of {requests} requests per case in ms"
          " (server time in-process: middleware, view, queries, JSON/HTML)")  # fmt: skip
    if seeded is not None:
        print(f"seeding took {seeded:.0f} s")
    print()
    print(f"{'':<8}{'case':<32}{'p50':>8}{'p95':>8}{'target':>8}  result")
    for kind, name, target, r in results:
        if r["status"] != 200:
            verdict, p50, p95 = f"n/a (HTTP {r['status']})", "-", "-"
        else:
            verdict = "PASS" if r["p95"] < target else "FAIL"
            if r["n"] < requests:
                verdict += f" ({r['n']} requests: time budget)"
            p50, p95 = f"{r['p50']:.1f}", f"{r['p95']:.1f}"
        print(f"{kind:<8}{name:<32}{p50:>8}{p95:>8}{'< ' + str(target):>8}  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="messages (1000000)")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per case")
    parser.add_argument("--reseed", action="store_true", help="empty and seed again")
    parser.add_argument("--index", action="store_true", help="run the search indexer first")
    env_url = os.environ.get("DATABASE_URL", "")
    parser.add_argument(
        "--database-url",
        default=env_url if env_url.startswith(("postgres://", "postgresql://")) else DEFAULT_DB,
        help=f"the benchmark's own PostgreSQL database (DATABASE_URL, else {DEFAULT_DB})",
    )
    args = parser.parse_args()

    import psycopg

    ensure_database(args.database_url)
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    print(f"benchmark database {args.database_url}: migrating", flush=True)
    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    print(f"  migrated in {time.perf_counter() - started:.0f} s", flush=True)
    with psycopg.connect(_pg_url(args.database_url)) as conn:
        have = stored_rows(conn)
    seeded = None
    if args.reseed or have != args.rows:
        print(f"seeding {args.rows:,} messages (the table holds {have:,})", flush=True)
        seeded = seed(args.database_url, args.rows)
        print(f"  seeded in {seeded:.0f} s", flush=True)
    else:
        print(f"reusing the {have:,} stored messages (--reseed to start over)", flush=True)
    if args.index or seeded is not None:
        print("search indexer", flush=True)
        index_all(args.database_url)
    print("measuring", flush=True)
    report(measure(args), args.rows, args.requests, seeded)


if __name__ == "__main__":
    main()
