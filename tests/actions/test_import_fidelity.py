"""The fidelity rule across an export and an import (contract: "Export and import"): a replay
of an imported message puts on the wire, AMQP field type by field type, what a replay of the
exported one puts there. Every header type of the fidelity tests (tests/typedvalues.py, the
replay round trip's stripped headers), every property, bodies that are not text."""

import json

import pytest

from dlq.actions import message as message_actions
from dlq.broker import codec
from dlq.broker.properties import encode_properties, properties_to_json
from dlq.models import Message
from dlq.models.actions import Outcome
from tests.actions.test_replay_roundtrip import STRIPPED
from tests.broker.test_header_roundtrip import PROPERTIES
from tests.conftest import drain_once, publish
from tests.factories import client_for, make_user
from tests.topology import get, only, reject
from tests.typedvalues import TYPED

pytestmark = pytest.mark.django_db(transaction=True)
NDJSON = "application/x-ndjson"
# What differs between two replays of any two messages: a new replay id, and the id of the
# message replayed. Their types do not.
PER_REPLAY = ("dlq-replay-id", "dlq-origin-id")


def _replayed(channel, work: str, message_id: int):
    result = message_actions.replay_one(message_id, "original", "alice", "reproduce")
    assert (result.outcome, result.detail) == (Outcome.CONFIRMED, "")
    method, props, body = get(channel, work)
    channel.basic_ack(method.delivery_tag)
    return method, props, body


def _wire(props, per_replay: dict) -> bytes:
    """The content header's property list as the consumer received it, with the two
    per-replay values as `per_replay` has them."""
    props.headers = {**props.headers, **per_replay}
    return b"".join(encode_properties(props))


@pytest.mark.parametrize("body", [b"\x00\xff{}binary\xc3(", b""], ids=["binary", "empty"])
def test_a_replay_of_an_imported_message_sends_what_the_original_would(channel, top, body):
    park, dlx = top.parking()
    orders = top.exchange("orders", "direct")
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    channel.queue_bind(work, orders, "order.created")
    publish(channel, orders, "order.created", body, {**TYPED, **STRIPPED}, **PROPERTIES)
    reject(channel, work)
    drain_once([park])
    original = only(park)
    admin = client_for(make_user("admin"), token=True)

    export = admin.get(f"/api/v1/messages/export?queue={park}")
    lines = b"".join(export.streaming_content)
    imported = admin.post(f"/api/v1/messages/import?queue={park}-copy", lines, NDJSON)
    assert imported.status_code == 200, imported.content[:500]
    copy = Message.objects.get(pk=imported.json()["messages"][0]["id"])
    assert (copy.status, copy.queue) == ("parked", f"{park}-copy")
    assert json.loads(copy.headers_json) == json.loads(original.headers_json)
    detail = admin.get(f"/api/v1/messages/{copy.pk}").json()
    assert detail["x_death"] == admin.get(f"/api/v1/messages/{original.pk}").json()["x_death"]
    assert detail["x_death"][0]["queue"] == work

    first = _replayed(channel, work, original.pk)
    second = _replayed(channel, work, copy.pk)

    (m1, p1, b1), (m2, p2, b2) = first, second
    assert b2 == b1 == body
    assert (
        (m2.exchange, m2.routing_key) == (m1.exchange, m1.routing_key) == (orders, "order.created")
    )
    assert properties_to_json(p2) == properties_to_json(p1)
    assert p2.headers["dlq-origin-id"] == {"type": "int64", "value": copy.pk}
    assert {k: v for k, v in p2.headers.items() if k not in PER_REPLAY} == {
        k: v for k, v in p1.headers.items() if k not in PER_REPLAY
    }
    assert list(p2.headers) == list(p1.headers)  # the table in the same order
    for name in TYPED:  # each header with its wire type, as published
        assert p2.headers[name] == TYPED[name], name
    same = {name: p1.headers[name] for name in PER_REPLAY}
    assert _wire(p2, same) == _wire(p1, same)  # the content header, byte for byte
    assert codec.encode_table(p2.headers) == codec.encode_table(p1.headers)
