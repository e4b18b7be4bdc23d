"""Export -> import round trips of hostile messages (tests/hostile.py): header names of any
bytes, typed values of every kind, properties as the wire allows them, any body. Each line is
strict JSON, and the imported message is the exported one: bytes, typed headers and
properties exactly, and what is derived from them."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq.models import Message
from tests.api.test_hostile_values import strict
from tests.factories import client_for, make_message, make_user
from tests.hostile import as_drained, property_sets, props_as_drained, spoofing_text, tables

pytestmark = pytest.mark.django_db
PROPERTIES = {"deadline": None, "database": None, "max_examples": 60,
              "suppress_health_check": list(HealthCheck)}  # fmt: skip
DERIVED = ("death_reason", "death_count", "failed_queue", "original_exchange",
           "original_routing_keys_json", "first_death_at", "exception_type",
           "exception_message", "message_type", "group", "message_id", "correlation_id",
           "content_type", "content_encoding", "size", "search_text", "replay_count")  # fmt: skip


@given(table=tables, body=st.binary(max_size=200), props=property_sets, queue=spoofing_text)
@settings(**PROPERTIES)
def test_hostile_messages_come_back_from_an_export_and_an_import_exactly(table, body, props, queue):
    admin = client_for(make_user("admin"), token=True)
    queue = queue.replace("\x00", "") or "q"
    original = make_message(headers=as_drained(table), body=body, queue=queue,
                            **props_as_drained(props))  # fmt: skip

    export = admin.get(f"/api/v1/messages/export?group={original.group}&queue=")
    content = b"".join(export.streaming_content)
    lines = content.splitlines()
    assert all(strict(line)["group"] == original.group for line in lines)
    mine = [line for line in lines if strict(line)["id"] == original.pk]
    assert len(mine) == 1

    answer = admin.post("/api/v1/messages/import", mine[0] + b"\n", "application/x-ndjson")
    assert answer.status_code == 200, answer.content[:500]
    copy = Message.objects.get(pk=answer.json()["messages"][0]["id"])
    original.refresh_from_db()
    assert bytes(copy.body) == bytes(original.body)
    assert json.loads(copy.headers_json) == json.loads(original.headers_json)
    assert list(copy.headers) == list(original.headers)
    assert copy.properties == original.properties
    assert (copy.vhost, copy.queue, copy.status) == (original.vhost, original.queue, "parked")
    for name in DERIVED:
        assert getattr(copy, name) == getattr(original, name), name
