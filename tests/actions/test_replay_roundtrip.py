"""Publish -> dead-letter -> drain -> replay -> consume: what arrives is the original message,
byte for byte, except the documented changes (rabbitmq-facts.md, "What a replay sends")."""

import base64
import struct

import pytest

from dlq.actions import message as message_actions
from dlq.broker.properties import properties_to_json
from dlq.models import Message, Status
from dlq.models.actions import Outcome, Replay
from tests.conftest import drain_once, publish
from tests.topology import get, reject, stored

pytestmark = pytest.mark.django_db(transaction=True)


def _s(text: str) -> dict:
    return {"type": "longstr", "value": text}


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


NASTY_HEADERS = {
    "float": {"type": "float", "value": 1.75},
    "float32": {"type": "float", "value": struct.unpack(">f", struct.pack(">f", 0.1))[0]},
    "double": {"type": "double", "value": -1.5e308},
    "decimal": {"type": "decimal", "value": "12.50"},
    "decimal-negative": {"type": "decimal", "value": "-0.001"},
    "int8": {"type": "int8", "value": -128},
    "uint8": {"type": "uint8", "value": 255},
    "int16": {"type": "int16", "value": -32768},
    "int32": {"type": "int32", "value": 7},
    "int64": {"type": "int64", "value": 2**63 - 1},
    "bool": {"type": "bool", "value": False},
    "bytes": {"type": "bytes", "base64": _b64(b"\x00\x01\xfe\xff")},
    "not-utf8": {"type": "longstr", "base64": _b64(b"caf\xe9 \xff\x00")},
    "nul": _s("before\u0000after"),
    "unicode": _s("héllo ✓ 日本"),
    "timestamp": {"type": "timestamp", "value": 1_700_000_000},
    "void": {"type": "void", "value": None},
    "nested": {
        "type": "table",
        "value": {
            "list": {
                "type": "array",
                "value": [
                    {"type": "float", "value": 2.5},
                    _s("\u0000"),
                    {"type": "int8", "value": 1},
                ],
            },
            "nul\u0000key": {"type": "decimal", "value": "1.5"},
        },
    },
    "retry-count": {"type": "int32", "value": 3},
}
# Client-set headers the broker passes through but a replay must not send.
STRIPPED = {
    "x-delivery-count": {"type": "int64", "value": 5},
    "x-last-death-queue": _s("forged"),
    "CC": {"type": "array", "value": [_s("copy-key")]},
}

BODIES = {
    "binary": bytes(range(256)) * 4,
    "empty": b"",
    "nul": b"a\x00b\x00\x00c",
    "json": '{"order": 1, "note": "ünïcødé"}'.encode(),
    "latin1": b"caf\xe9",
}


def _properties(name: str) -> dict:
    return {
        "message_id": f"m-{name}",
        "correlation_id": {"base64": _b64(b"\xff\xfecorr")},  # a short string that is not UTF-8
        "timestamp": 1_700_000_123,
        "content_type": "application/json" if name == "json" else "application/octet-stream",
        "content_encoding": "identity",
        "delivery_mode": 2,
        "priority": 7,
        "type": "order.created",
        "app_id": "shop",
        "reply_to": "replies",
        "expiration": "600000",
        "user_id": "guest",
    }


def test_it_replays_a_message_byte_for_byte_except_the_documented_changes(channel, top):
    park, dlx = top.parking()
    orders = top.exchange("orders", "direct")
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    copies = top.queue("copies")
    channel.queue_bind(work, orders, "order.created")
    channel.queue_bind(copies, orders, "copy-key")
    headers = {**NASTY_HEADERS, **STRIPPED}
    for name, body in BODIES.items():
        publish(channel, orders, "order.created", body, headers, **_properties(name))
    for _ in BODIES:
        reject(channel, work)
    channel.queue_purge(copies)  # the CC copies of the first life

    drain_once([park])

    rows = {m.message_id: m for m in stored(park, len(BODIES))}
    for row in rows.values():
        result = message_actions.replay_one(row.pk, "original", "alice", "fixed the consumer")
        assert (result.outcome, result.detail) == (Outcome.CONFIRMED, "")

    for _ in BODIES:
        method, props, body = get(channel, work)
        row = rows[props.message_id]
        name = row.message_id.removeprefix("m-")
        assert body == BODIES[name]
        assert (method.exchange, method.routing_key) == (orders, "order.created")
        expected_props = _properties(name)
        del expected_props["expiration"], expected_props["user_id"]
        assert properties_to_json(props) == expected_props
        replay = Replay.objects.get(message=row)
        assert props.headers == {
            **NASTY_HEADERS,
            "original-user-id": _s("guest"),
            "dlq-replay-id": _s(replay.replay_id),
            "dlq-replay-count": {"type": "int32", "value": 1},
            "dlq-origin-id": {"type": "int64", "value": row.pk},
        }
        channel.basic_ack(method.delivery_tag)
    # CC is not sent again: the queue bound to the CC key got nothing.
    assert channel.queue_declare(copies, passive=True).method.message_count == 0
    assert channel.queue_declare(work, passive=True).method.message_count == 0
    for row in Message.objects.filter(queue=park):
        assert (row.status, row.replay_count) == (Status.REPLAYED, 1)
        assert row.replays.get().outcome == Outcome.CONFIRMED


def test_it_links_a_replayed_message_that_dies_again_to_its_earlier_life(channel, top):
    park, dlx = top.parking()
    orders = top.exchange("orders", "topic")
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    channel.queue_bind(work, orders, "order.*")
    publish(channel, orders, "order.created", b"poison", {"tenant": "t-1"}, message_id="p-1")
    reject(channel, work)
    drain_once([park])
    first = stored(park)[0]

    message_actions.replay_one(first.pk, "original", "alice", "try again")
    reject(channel, work)  # the consumer still fails
    drain_once([park])
    second = stored(park, 2)[1]

    assert (second.previous_id, second.lineage_id, second.replay_count) == (first.pk, first.pk, 1)
    assert second.status == Status.PARKED
    assert second.failed_queue == work
    assert second.original_exchange == orders
    assert second.headers["tenant"] == _s("t-1")
    assert second.headers["dlq-origin-id"] == {"type": "int64", "value": first.pk}
    # The broker's history starts afresh: the replay did not carry the old x-death.
    assert len(second.headers["x-death"]["value"]) == 1
    assert second.death_count == 1

    result = message_actions.replay_one(second.pk, "failed_queue", "alice", "once more")
    assert result.outcome == Outcome.CONFIRMED
    method, props, _ = get(channel, work)
    assert props.headers["dlq-replay-count"] == {"type": "int32", "value": 2}
    assert props.headers["dlq-origin-id"] == {"type": "int64", "value": second.pk}
    channel.basic_reject(method.delivery_tag, requeue=False)
    drain_once([park])
    third = stored(park, 3)[2]
    assert (third.previous_id, third.lineage_id, third.replay_count) == (second.pk, first.pk, 2)
    lives = Message.objects.filter(queue=park).order_by("id")
    assert list(lives.values_list("status", flat=True)) == ["replayed", "replayed", "parked"]
