"""Every AMQP value survives broker -> drainer -> stored typed JSON -> broker, byte for byte."""

import gzip
import random
import struct

import pytest

from dlq.broker import codec
from tests.conftest import drain_once, publish
from tests.topology import only, reject, stored
from tests.typedvalues import FLOAT32, TYPED, b64, longstr

pytestmark = pytest.mark.django_db(transaction=True)

BROKER_HEADERS = (
    "x-death",
    "x-first-death-queue",
    "x-first-death-reason",
    "x-first-death-exchange",
    "x-last-death-queue",  # RabbitMQ 3.13 and later
    "x-last-death-reason",
    "x-last-death-exchange",
)

PROPERTIES = {
    "content_type": "application/json; charset=utf-8",
    "content_encoding": "identity",
    "delivery_mode": 2,
    "priority": 7,
    "correlation_id": "corr-\u00e9",
    "reply_to": "billing.replies",
    "message_id": {"base64": b64(b"\xffid\x00")},  # a short string that is not UTF-8
    "timestamp": 1_700_000_123,
    "type": "orders.Created",
    "user_id": "guest",  # the broker checks it against the connection's user
    "app_id": "billing",
    "cluster_id": "c1",
}


def test_it_stores_every_field_type_exactly(rabbit, channel, top):
    park = top.queue("dlq")
    publish(channel, "", park, b"{}", TYPED, expiration="600000", **PROPERTIES)

    drain_once([park])

    m = only(park)
    assert m.headers == TYPED
    # The table in the order the broker delivered it: as published on 3.x; 4.x hands every
    # table out sorted by key.
    assert list(m.headers) == (sorted(TYPED) if rabbit.v4 else list(TYPED))
    assert m.headers["float"]["value"] == 1.75  # pika alone would have stored 1
    assert m.headers["float32"]["value"] == FLOAT32
    assert m.properties == {**PROPERTIES, "expiration": "600000"}
    assert m.message_id == ""  # not text: only the typed property keeps it
    assert m.correlation_id == "corr-\u00e9"
    assert m.drain_note == ""


def test_it_keeps_every_field_type_through_dead_lettering(channel, top):
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    publish(channel, "", work, b"{}", TYPED, **PROPERTIES)
    reject(channel, work)  # the broker decodes and re-encodes the headers to add x-death

    drain_once([park])

    m = only(park)
    assert {k: v for k, v in m.headers.items() if k not in BROKER_HEADERS} == TYPED
    assert m.properties == PROPERTIES
    assert m.death_reason == "rejected"


def test_it_publishes_stored_headers_back_identically(channel, top):
    """The stored typed JSON, encoded again by dlq.broker.codec, is the same message on a second
    trip."""
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    again = top.queue("again")
    publish(channel, "", work, b"\x00body", TYPED, **PROPERTIES)
    reject(channel, work)
    drain_once([park])
    first = only(park)
    assert codec.decode_table(codec.encode_table(first.headers), 0)[0] == first.headers

    publish(channel, "", again, bytes(first.body), first.headers, **first.properties)
    drain_once([again])

    second = only(again)
    assert second.headers_json == first.headers_json
    assert second.properties_json == first.properties_json
    assert bytes(second.body) == b"\x00body"
    assert (second.failed_queue, second.death_count) == (first.failed_queue, 1)
    assert second.original_routing_keys == first.original_routing_keys == [work]


def _deep_wire(levels: int) -> bytes:
    """A value nested `levels` deep, tables and arrays in turn, as AMQP field bytes."""
    field = b"V"
    for level in range(levels):
        if level % 2:
            field = b"F" + struct.pack(">I", len(field) + 2) + b"\x01k" + field
        else:
            field = b"A" + struct.pack(">I", len(field)) + field
    return field


def test_it_stores_a_header_nested_thousands_deep_and_sends_it_back(channel, top):
    """RabbitMQ accepts it; a recursive decoder would drop the connection on every try."""
    park, again = top.queue("dlq"), top.queue("again")
    wire = _deep_wire(3000)
    assert wire[:1] == b"F"
    deep = {"type": "table", "base64": b64(wire[5:])}  # the codec sends undecoded bytes as is
    publish(channel, "", park, b"deep", {"deep": deep, "after": "still read"})

    drain_once([park])

    m = only(park)
    assert m.headers["after"] == longstr("still read")
    level, depth = m.headers["deep"], 0
    while "value" in level:
        level = level["value"]["k"] if level["type"] == "table" else level["value"][0]
        depth += 1
    assert depth == codec.MAX_NESTING  # decoded this far, the rest kept as bytes
    assert codec.encode_value(m.headers["deep"]) == wire

    publish(channel, "", again, b"deep", m.headers)
    drain_once([again])
    assert only(again).headers_json == m.headers_json


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_it_refuses_a_non_finite_float_before_the_broker_sees_it(channel, top, value):
    """RabbitMQ 3.10 closes the whole connection (541 INTERNAL_ERROR) on a NaN header."""
    park = top.queue("dlq")
    with pytest.raises(codec.AmqpValueError, match="refuses"):
        publish(channel, "", park, b"", {"nan": {"type": "double", "value": value}})
    publish(channel, "", park, b"after", {"f": {"type": "float", "value": 3.4e38}})

    drain_once([park])

    m = only(park)  # the connection survived; only the finite value went out
    assert bytes(m.body) == b"after"
    assert m.headers["f"] == {
        "type": "float",
        "value": struct.unpack(">f", struct.pack(">f", 3.4e38))[0],
    }


def test_it_stores_nasty_bodies_byte_for_byte(channel, top):
    park = top.queue("dlq")
    big = random.Random(7).randbytes(5 * 1024 * 1024)
    text = "gzip ✓ compressed text " * 100
    packed = gzip.compress(text.encode(), mtime=0)
    bodies = {
        "empty": (b"", {}),
        "binary": (b"\x00\xff\xfe\x00\xc3(\x00", {"content_type": "application/octet-stream"}),
        "big": (big, {}),
        "gzip": (packed, {"content_encoding": "gzip", "content_type": "text/plain"}),
    }
    for name, (body, props) in bodies.items():
        publish(channel, "", park, body, message_id=name, **props)

    drain_once([park])

    rows = {m.message_id: m for m in stored(park, len(bodies))}
    for name, (body, _) in bodies.items():
        assert bytes(rows[name].body) == body, name
        assert rows[name].size == len(body), name
    assert rows["gzip"].content_encoding == "gzip"  # stored compressed, never re-encoded
    assert "gzip ✓ compressed text" in rows["gzip"].search_text  # but searchable
    assert "\x00" not in rows["binary"].search_text
