"""A varied corpus of deliveries for build_row, and its rows as JSON-comparable values.

tests/golden/build_rows.json holds the rows that build_row of 0.1.0 made of this corpus;
tests/golden/fingerprints.json the fingerprints of 0.2.0, whose JSON text is compact (orjson).
Stored values, and fingerprints above all (redeliveries are matched by them across
versions), must never change unnoticed. Regenerate a file only for an intended change:
    .venv/bin/python -m tests.ingestcases > tests/golden/build_rows.json
    .venv/bin/python -m tests.ingestcases fingerprints > tests/golden/fingerprints.json
"""

import gzip
import hashlib
import json
import sys
from datetime import UTC, datetime

from dlq.broker import amqp, codec
from dlq.messages.ingest import Delivery
from tests.typedvalues import TYPED, b64, longstr

RECEIVED_AT = datetime(2026, 11, 22, 12, 0, 0, 123456, tzinfo=UTC)
GOLDEN = "tests/golden/build_rows.json"
GOLDEN_FINGERPRINTS = "tests/golden/fingerprints.json"


def _nested(depth: int, value: dict | None = None) -> dict:
    value = value or longstr("bottom")
    for i in range(depth):
        value = {"type": "array" if i % 2 else "table", "value": [value] if i % 2 else {"k": value}}
    return value


EVERY_TYPE = {
    **TYPED,
    # Deeper than MAX_NESTING: the decoder keeps the innermost levels as wire bytes.
    "deep": _nested(60, {"type": "table", "base64": b64(codec.encode_value(_nested(9))[5:])}),
}


def _entry(queue, reason, count=1, exchange="", keys=(), time=1_700_000_000) -> dict:
    return {
        "type": "table",
        "value": {
            "count": {"type": "int64", "value": count},
            "reason": longstr(reason),
            "queue": longstr(queue),
            "time": {"type": "timestamp", "value": time},
            "exchange": longstr(exchange),
            "routing-keys": {"type": "array", "value": [longstr(k) for k in keys]},
        },
    }


def _x_death(*entries) -> dict:
    return {"type": "array", "value": list(entries)}


BENCH_LIKE = {
    "tenant": longstr("tenant-3"),
    "attempt": {"type": "int32", "value": 2},
    "x-death": _x_death(_entry("orders.work", "expired", keys=["orders.work"])),
    "x-first-death-exchange": longstr(""),
    "x-first-death-queue": longstr("orders.work"),
    "x-first-death-reason": longstr("expired"),
}
SPRING_TRACE = (
    "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: failed\n"
    "\tat a.b.C.d(C.java:1)\n"
    "Caused by: java.lang.IllegalStateException: boom\n"
    "\t... 3 more"
)
HEADERS = [
    {},
    BENCH_LIKE,
    EVERY_TYPE,
    {
        "x-death": _x_death(
            _entry("q.retry", "rejected", 3, "ex.retry", ["k1", "k2"], 1_700_000_100),
            _entry("q.main", "expired", 2, "ex.main", ["orig"], 1_700_000_000),
            {"type": "table", "value": {"queue": {"type": "int8", "value": 1}}},  # forged
            longstr("junk"),
        ),
        "x-first-death-queue": longstr("q.main"),
        "x-first-death-reason": longstr("expired"),
        "x-first-death-exchange": {"type": "longstr", "base64": b64(b"ex\xff")},
        "x-last-death-queue": longstr("q.retry"),
        "x-last-death-reason": longstr("rejected"),
        "x-delivery-count": {"type": "int32", "value": 4},
        "retry-count": longstr("7"),
    },
    {
        "x-death": _x_death(
            {
                "type": "table",
                "value": {
                    "queue": longstr("q"),
                    "count": {"type": "bool", "value": True},
                    "exchange": {"type": "bytes", "base64": b64(b"bin-ex")},
                    "routing-keys": longstr("not a list"),
                    "time": longstr("not a time"),
                    "original-expiration": longstr("5000"),
                },
            }
        ),
        "x-delivery-count": {"type": "int64", "value": 2**40},
        "dlq-origin-id": longstr("42"),
        "dlq-replay-count": {"type": "int8", "value": 2},
    },
    {
        "x-exception-message": longstr("boom"),
        "x-exception-stacktrace": longstr(SPRING_TRACE),
        "x-original-exchange": longstr("spring.ex"),
        "x-original-routingKey": longstr("spring.key"),
        "__TypeId__": longstr("com.example.Order"),
        "dlq-origin-id": {"type": "int64", "value": 9},
    },
    {
        "MT-Reason": longstr("fault"),
        "MT-Fault-ExceptionType": longstr("System.InvalidOperationException"),
        "MT-Fault-Message": longstr("bad \u0000 order"),
        "MT-Fault-StackTrace": longstr("at X.Y()"),
        "MT-Fault-MessageType": longstr("urn:message:Orders:Submit"),
        "MT-Fault-InputAddress": longstr("rabbitmq://host/vh/submit%20order?bind=true"),
        "MT-Fault-RetryCount": {"type": "int32", "value": 5},
    },
    {
        "NServiceBus.ExceptionInfo.ExceptionType": longstr("System.Exception"),
        "NServiceBus.ExceptionInfo.Message": longstr("nsb"),
        "NServiceBus.ExceptionInfo.StackTrace": longstr("trace"),
        "NServiceBus.EnclosedMessageTypes": longstr("Ns.Msg, Ns, Version=1;Ns.IMsg"),
        "NServiceBus.FailedQ": longstr("sales@machine"),
    },
    {
        "X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\ErrorDetailsStamp": longstr(
            json.dumps(
                [
                    {
                        "exceptionClass": "App\\Boom",
                        "exceptionMessage": "sym",
                        "flattenException": {"traceAsString": "#0 sym"},
                    }
                ]
            )
        ),
        "X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\RedeliveryStamp": longstr(
            '[{"retryCount": 3}]'
        ),
        "X-Message-Stamp-Bad\\RedeliveryStamp": longstr("{not json"),
        "type": longstr("App\\Message\\Order"),
    },
    {
        "task": longstr("proj.tasks.add"),
        "retries": {"type": "int8", "value": 2},
        "id": longstr("c0ffee"),
        "argsrepr": longstr("(1, 2)"),
    },
    {
        "x-delivery-count": longstr("²"),
        "retry-count": longstr("1e3"),
        "x-retries": longstr("9" * 30),
        "dlq-origin-id": longstr("-5"),
        "dlq-replay-count": longstr("-3"),
        "x-death": longstr("not an array"),
        "x-exception-stacktrace": {"type": "int8", "value": 1},
    },
]
PROPERTIES = [
    {},
    {
        "content_type": "application/json",
        "delivery_mode": 2,
        "message_id": "bench-1",
        "timestamp": 1_700_000_000,
        "app_id": "dlq-bench",
    },
    {
        "content_type": "text/plain",
        "content_encoding": "gzip",
        "correlation_id": "corr\u0000id",
        "reply_to": "replies",
        "expiration": "60000",
        "message_id": "m" * 255,
        "type": "order.created",
        "user_id": "guest",
        "app_id": "app",
        "cluster_id": "c",
        "priority": 9,
        "delivery_mode": 1,
        "timestamp": 0,
    },
    {"message_id": {"base64": b64(b"\xffid")}, "correlation_id": "ünïcode ✓"},
]
BODIES = [
    b"",
    b'{"order_id": 1, "note": "plain JSON"}',
    "unicode body ✓ 日本 \U0001f600".encode(),
    b"\xff\xfe not utf-8 \x00",
    gzip.compress(b"gzipped text " * 100, mtime=0),
    b"\x1f\x8bnot really gzip",
    ("x" * 70_000).encode(),  # longer than the searched part
    ("é" * 40_000).encode(),  # cut inside a character
    b"nul \x00 inside",
]


def _wire(properties: dict, headers: dict) -> amqp.TypedProperties:
    """As pika hands them over: encoded, then decoded by TypedProperties."""
    sent = amqp.make_properties(properties, headers or None)
    return amqp.TypedProperties().decode(b"".join(sent.encode()))


def deliveries() -> list[Delivery]:
    found = []
    i = 0
    for headers in HEADERS:
        for properties in PROPERTIES:
            for quorum in (False, True):
                body = BODIES[i % len(BODIES)]
                exchange = ["", "ex", b"ex\xff", "ex\u0000"][i % 4]
                key = ["rk", b"\xffrk", "ключ", ""][i // 4 % 4]
                found.append(
                    Delivery(
                        f"parking-{i % 3}",
                        ["/", "vh ✓"][i // 2 % 2],
                        exchange,
                        key,
                        bool(i % 3 == 0),
                        _wire(properties, headers),
                        body,
                        quorum,
                    )
                )
                i += 1
    # Content-encoding gzip with every body
    for body in BODIES:
        found.append(
            Delivery("gz", "/", "", "", False, _wire({"content_encoding": "gzip"}, {}), body)
        )
    return found


def comparable(row: dict) -> dict:
    """A row as JSON: bytes and datetimes spelled out, every type visible."""
    out = {}
    for key, value in row.items():
        if isinstance(value, bytes | str) and len(value) > 200:  # a digest keeps the file small
            raw = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
            value = {"sha256": hashlib.sha256(raw).hexdigest(), "length": len(value)}
        elif isinstance(value, bytes):
            value = {"bytes": value.hex()}
        elif isinstance(value, datetime):
            value = {"datetime": value.isoformat()}
        out[key] = [type(value).__name__, value]
    return out


def rows() -> list[dict]:
    from dlq.messages.ingest import build_row

    return [comparable(build_row(d, RECEIVED_AT)) for d in deliveries()]


def fingerprints() -> list[str]:
    from dlq.messages.ingest import build_row

    return [build_row(d, RECEIVED_AT)["fingerprint"] for d in deliveries()]


if __name__ == "__main__":
    if sys.argv[1:] == ["fingerprints"]:
        sys.stdout.write("[\n" + ",\n".join(json.dumps(fp) for fp in fingerprints()) + "\n]\n")
        sys.exit()
    lines = (json.dumps(row, ensure_ascii=True, sort_keys=True) for row in rows())
    sys.stdout.write("[\n" + ",\n".join(lines) + "\n]\n")  # a row a line
