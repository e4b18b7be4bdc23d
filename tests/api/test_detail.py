import base64
import gzip
from datetime import UTC, datetime, timedelta

import pytest

from dlq.actions import message as message_actions
from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db

LIST_FIELDS = {
    "id", "queue", "vhost", "status", "message_id", "correlation_id", "exchange", "routing_key",
    "original_exchange", "original_routing_keys", "failed_queue", "death_reason", "death_count",
    "delivery_count", "first_death_at", "received_at", "size", "content_type",
    "content_encoding", "exception_type", "exception_message", "message_type", "group",
    "replay_count", "trace_id", "trace_url",
}  # fmt: skip
DETAIL_FIELDS = LIST_FIELDS | {
    "exception_stacktrace", "body_base64", "body_text", "body_truncated", "properties",
    "headers", "x_death", "history", "versions", "redrive",
}  # fmt: skip
TYPED = {
    "tiny": {"type": "int8", "value": -5},
    "price": {"type": "decimal", "value": "12.50"},
    "raw": {"type": "bytes", "base64": base64.b64encode(b"\x00\xff").decode()},
    "latin1": {"type": "longstr", "base64": base64.b64encode(b"caf\xe9").decode()},
    "sent": {"type": "timestamp", "value": 1700000000},
    "ratio": {"type": "double", "value": "NaN"},
    "nothing": {"type": "void", "value": None},
    "meta": {
        "type": "table",
        "value": {"tags": {"type": "array", "value": [{"type": "uint16", "value": 7}]}},
    },
}


def read(message_id: int) -> dict:
    response = client_for(make_user("viewer"), token=True).get(f"/api/v1/messages/{message_id}")
    assert response.status_code == 200, response.content
    return response.json()


def test_it_gives_the_contract_fields_in_list_and_detail():
    message = make_message()
    client = client_for(make_user("viewer"), token=True)
    assert set(client.get("/api/v1/messages").json()["results"][0]) == LIST_FIELDS
    assert set(read(message.id)) == DETAIL_FIELDS


def test_it_gives_the_derived_fields():
    body = read(make_message(message_id="m-1", correlation_id="c-9").id)
    assert body["queue"] == "orders.dlq" and body["vhost"] == "/"
    assert body["status"] == "parked"
    assert (body["message_id"], body["correlation_id"]) == ("m-1", "c-9")
    assert (body["exchange"], body["routing_key"]) == ("orders.dlx", "order.created")
    assert body["original_exchange"] == "orders.events"
    assert body["original_routing_keys"] == ["order.created"]
    assert (body["failed_queue"], body["death_reason"], body["death_count"]) == (
        "orders",
        "rejected",
        1,
    )
    assert body["size"] == len(b'{"order": 1}')
    assert body["replay_count"] == 0


def test_it_gives_headers_in_typed_json_and_properties_plain():
    message = make_message(
        headers=TYPED,
        content_type="application/json",
        delivery_mode=2,
        priority=4,
        timestamp=1700000000,
        app_id="billing",
    )
    body = read(message.id)
    for name, typed in TYPED.items():
        assert body["headers"][name] == typed
    assert body["headers"]["x-first-death-queue"] == {"type": "longstr", "value": "orders"}
    assert body["properties"] == {
        "content_type": "application/json",
        "delivery_mode": 2,
        "priority": 4,
        "timestamp": 1700000000,
        "app_id": "billing",
    }


def test_it_gives_x_death_as_readable_entries():
    at = datetime(2025, 5, 1, 12, 0, 5, tzinfo=UTC)
    body = read(make_message(received_at=at).id)
    assert body["x_death"] == [
        {
            "queue": "orders",
            "reason": "rejected",
            "count": 1,
            "time": "2025-05-01T12:00:05Z",
            "exchange": "orders.events",
            "routing_keys": ["order.created"],
            "original_expiration": None,
        }
    ]


def test_it_gives_the_body_as_base64_and_as_text():
    body = read(make_message(body="naïve ✓".encode()).id)
    assert base64.b64decode(body["body_base64"]) == "naïve ✓".encode()
    assert body["body_text"] == "naïve ✓"


def test_it_decodes_a_gzip_body_for_reading_only():
    raw = gzip.compress(b"hello, compressed")
    body = read(make_message(body=raw, content_encoding="gzip").id)
    assert body["body_text"] == "hello, compressed"
    assert base64.b64decode(body["body_base64"]) == raw


def test_it_gives_no_text_for_a_binary_body():
    body = read(make_message(body=b"\x89PNG\r\n\x1a\n\x00\xff").id)
    assert body["body_text"] is None


def test_it_gives_the_exception_of_a_spring_failure():
    trace = "java.lang.IllegalStateException: stock is negative\n\tat com.acme.Stock.take"
    message = make_message(
        headers={"x-exception-message": "stock is negative", "x-exception-stacktrace": trace}
    )
    body = read(message.id)
    assert body["exception_type"] == "java.lang.IllegalStateException"
    assert body["exception_message"] == "stock is negative"
    assert body["exception_stacktrace"] == trace


def test_it_gives_the_history_of_the_whole_lineage():
    t0 = datetime(2025, 5, 1, tzinfo=UTC)
    first = make_message(received_at=t0)
    second = make_message(
        received_at=t0 + timedelta(hours=1),
        reason="expired",
        headers={"dlq-origin-id": first.id, "dlq-replay-count": 1},
    )
    third = make_message(
        queue="orders.parking",
        received_at=t0 + timedelta(hours=2),
        headers={"dlq-origin-id": second.id, "dlq-replay-count": 2},
    )
    make_message(received_at=t0 + timedelta(hours=3))  # unrelated
    expected = [
        {
            "at": "2025-05-01T00:00:00Z",
            "event": "arrived",
            "actor": None,
            "message": first.id,
            "detail": {"queue": "orders.dlq", "reason": "rejected"},
        },
        {
            "at": "2025-05-01T01:00:00Z",
            "event": "arrived",
            "actor": None,
            "message": second.id,
            "detail": {"queue": "orders.dlq", "reason": "expired"},
        },
        {
            "at": "2025-05-01T02:00:00Z",
            "event": "arrived",
            "actor": None,
            "message": third.id,
            "detail": {"queue": "orders.parking", "reason": "rejected"},
        },
    ]
    assert read(first.id)["history"] == expected
    assert read(third.id)["history"] == expected
    assert read(third.id)["replay_count"] == 2


def test_it_gives_every_earlier_version_as_it_was_before_each_edit():
    m = make_message(body=b"v1", content_type="text/plain", headers={"tenant": "a"})
    assert read(m.id)["versions"] == []
    message_actions.edit(m.id, "erin", "fix the typo", body_text="v2")
    message_actions.edit(
        m.id, "sam", "route to tenant b", headers={"tenant": {"type": "longstr", "value": "b"}}
    )

    body = read(m.id)
    first, second = body["versions"]
    assert (first["actor"], first["reason"]) == ("erin", "fix the typo")
    assert base64.b64decode(first["body_base64"]) == b"v1"
    assert first["headers"]["tenant"] == {"type": "longstr", "value": "a"}
    assert first["properties"]["content_type"] == "text/plain"
    assert (second["actor"], second["reason"]) == ("sam", "route to tenant b")
    assert base64.b64decode(second["body_base64"]) == b"v2"
    assert second["headers"]["tenant"] == {"type": "longstr", "value": "a"}
    assert first["at"] <= second["at"]
    assert base64.b64decode(body["body_base64"]) == b"v2"  # the current one is the message
    assert body["headers"]["tenant"] == {"type": "longstr", "value": "b"}
