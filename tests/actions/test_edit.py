"""Editing a parked message: validated field by field, the old version kept, the diff audited,
and a replay afterwards sends exactly the edited bytes."""

import base64
import json
import tracemalloc
import zlib

import pytest

from dlq.actions import message as message_actions
from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, MessageVersion
from tests.factories import make_message
from tests.topology import get

pytestmark = pytest.mark.django_db(transaction=True)


def _s(text: str) -> dict:
    return {"type": "longstr", "value": text}


def _json_message(**kwargs) -> Message:
    return make_message(body=b'{"order": 1}', content_type="application/json",
                        message_id="order-1", headers={"tenant": "acme"}, **kwargs)  # fmt: skip


def _unchanged(m: Message) -> None:
    fresh = Message.objects.get(pk=m.pk)
    assert bytes(fresh.body) == bytes(m.body)
    assert (fresh.headers, fresh.properties) == (m.headers, m.properties)
    assert not MessageVersion.objects.filter(message=m).exists()
    assert not AuditEntry.objects.filter(action="edit").exists()


def test_it_edits_the_body_keeps_the_old_version_and_audits_the_diff():
    m = _json_message()

    edited = message_actions.edit(m.pk, "carol", " fix the order id ", body_text='{"order": 2}')

    assert bytes(edited.body) == b'{"order": 2}'
    assert edited.size == 12
    fresh = Message.objects.get(pk=m.pk)
    assert bytes(fresh.body) == b'{"order": 2}'
    assert '"order": 2' in fresh.search_text
    version = MessageVersion.objects.get(message=m)
    assert (version.number, bytes(version.body)) == (1, b'{"order": 1}')
    assert (version.replaced_by, version.reason) == ("carol", "fix the order id")
    assert json.loads(version.headers_json) == m.headers
    entry = AuditEntry.objects.get(action="edit")
    assert (entry.actor_name, entry.reason, entry.message_ids) == ("carol", "fix the order id",
                                                                    [m.pk])  # fmt: skip
    assert entry.diff["body"]["before"] == '{"order": 1}'
    assert entry.diff["body"]["after"] == '{"order": 2}'
    assert '-{"order": 1}' in entry.diff["body"]["unified"]
    assert set(entry.diff) == {"body"}

    message_actions.edit(m.pk, "carol", "again", body_text='{"order": 3}')
    numbers = list(MessageVersion.objects.filter(message=m).order_by("number"))
    assert [(v.number, bytes(v.body)) for v in numbers] == [(1, b'{"order": 1}'),
                                                            (2, b'{"order": 2}')]  # fmt: skip


def test_it_keeps_a_json_body_valid_json():
    m = _json_message()

    with pytest.raises(message_actions.ActionError) as refused:
        message_actions.edit(m.pk, "carol", "typo", body_text='{"order": 2')

    assert list(refused.value.errors) == ["body_text"]
    assert "not" in refused.value.errors["body_text"][0]
    _unchanged(m)
    # Switching the content type away from JSON makes the same body acceptable.
    message_actions.edit(m.pk, "carol", "not json", body_text='{"order": 2',
                 properties={**m.properties, "content_type": "text/plain"})  # fmt: skip
    assert Message.objects.get(pk=m.pk).content_type == "text/plain"


def test_it_edits_a_binary_body_from_base64_and_diffs_it_as_bytes():
    m = make_message(body=b"\x00\x01", content_type="application/octet-stream")
    new = bytes(range(256))

    message_actions.edit(m.pk, "carol", "binary", body_base64=base64.b64encode(new).decode())

    assert bytes(Message.objects.get(pk=m.pk).body) == new
    diff = AuditEntry.objects.get(action="edit").diff["body"]
    assert base64.b64decode(diff["before_base64"]) == b"\x00\x01"
    assert (diff["before_size"], diff["after_size"]) == (2, 256)


def test_it_refuses_bad_body_input():
    m = _json_message()
    cases = [
        ({"body_base64": "not base64!"}, "body_base64"),
        ({"body_text": "{}", "body_base64": "e30="}, "body_text"),
        ({"body_text": 12}, "body_text"),
        ({"body_text": '{"order": 1}'}, "detail"),  # nothing changes
    ]
    for kwargs, field in cases:
        with pytest.raises(message_actions.ActionError) as refused:
            message_actions.edit(m.pk, "carol", "bad", **kwargs)
        assert field in refused.value.errors, kwargs
    _unchanged(m)


def test_it_reports_typed_header_errors_field_by_field():
    m = _json_message()
    headers = {
        "ok": _s("fine"),
        "too-big": {"type": "int8", "value": 300},
        "no-type": "plain string",
        "bad-decimal": {"type": "decimal", "value": "abc"},
        "nan": {"type": "double", "value": "NaN"},
        "nested": {"type": "table", "value": {"inner": {"type": "uint8", "value": -1}}},
    }

    with pytest.raises(message_actions.ActionError) as refused:
        message_actions.edit(m.pk, "carol", "bad headers", headers=headers)

    errors = refused.value.errors
    assert set(errors) == {"headers.too-big", "headers.no-type", "headers.bad-decimal",
                           "headers.nan", "headers.nested"}  # fmt: skip
    assert "int8" in errors["headers.too-big"][0]
    assert "inner" in errors["headers.nested"][0]
    assert refused.value.status == 400
    _unchanged(m)


def test_it_reports_property_errors_field_by_field():
    m = _json_message()
    properties = {"content_type": "application/json", "priority": 300, "message_id": "x" * 256,
                  "colour": "red", "timestamp": -1}  # fmt: skip

    with pytest.raises(message_actions.ActionError) as refused:
        message_actions.edit(m.pk, "carol", "bad properties", properties=properties)

    assert set(refused.value.errors) == {"properties.priority", "properties.message_id",
                                         "properties.colour", "properties.timestamp"}  # fmt: skip
    assert "255" in refused.value.errors["properties.message_id"][0]
    _unchanged(m)


def test_it_refuses_headers_that_would_not_fit_in_a_frame():
    m = _json_message()

    with pytest.raises(message_actions.ActionError) as refused:
        message_actions.edit(
            m.pk, "carol", "huge", headers={**m.headers, "blob": _s("x" * 140_000)}
        )

    assert "frame limit" in refused.value.errors["headers"][0]
    _unchanged(m)


def test_it_edits_headers_and_properties_and_audits_both(top):
    m = _json_message(queue=top.name("dlq"))
    headers = {**m.headers, "tenant": _s("globex"), "fixed": {"type": "bool", "value": True}}
    del headers["x-first-death-reason"]
    properties = {**m.properties, "priority": 5}

    message_actions.edit(m.pk, "carol", "retarget", headers=headers, properties=properties)

    fresh = Message.objects.get(pk=m.pk)
    assert (fresh.headers, fresh.properties) == (headers, properties)
    assert "tenant=globex" in fresh.search_text
    diff = AuditEntry.objects.get(action="edit").diff
    assert diff["headers"] == {
        "tenant": {"before": _s("acme"), "after": _s("globex")},
        "x-first-death-reason": {"before": _s("rejected"), "after": None},
        "fixed": {"before": None, "after": {"type": "bool", "value": True}},
    }
    assert diff["properties"] == {"priority": {"before": None, "after": 5}}


def test_it_replays_the_edited_bytes(channel, top):
    work = top.queue("work")
    m = make_message(queue=top.name("dlq"), exchange="", routing_key=work, died_in=work,
                     body=b'{"amount": "12,50"}', content_type="application/json",
                     headers={"tenant": "acme", "attempt": 1})  # fmt: skip
    headers = {**m.headers, "tenant": _s("globex"), "price": {"type": "decimal", "value": "12.50"}}

    message_actions.edit(m.pk, "carol", "fix amount", body_text='{"amount": 12.5}', headers=headers,
                 properties={**m.properties, "correlation_id": "c-9"})  # fmt: skip
    result = message_actions.replay_one(m.pk, "original", "carol", "after the fix")

    assert result.outcome == "confirmed"
    _, props, body = get(channel, work)
    assert body == b'{"amount": 12.5}'
    assert props.correlation_id == "c-9"
    assert props.headers["tenant"] == _s("globex")
    assert props.headers["price"] == {"type": "decimal", "value": "12.50"}
    assert props.headers["attempt"] == {"type": "int32", "value": 1}
    assert "x-death" not in props.headers


def test_it_only_edits_parked_messages(top):
    work = top.queue("work")
    replayed = make_message(queue=top.name("dlq"), died_in=work)
    message_actions.replay_one(replayed.pk, "failed_queue", "carol", "go")
    discarded = make_message(queue=top.name("dlq"))
    message_actions.discard(discarded.pk, "carol", "junk")

    for m in (replayed, discarded):
        with pytest.raises(message_actions.Conflict) as refused:
            message_actions.edit(m.pk, "carol", "late", body_text="changed")
        assert refused.value.status == 409
    with pytest.raises(message_actions.NotFound) as missing:
        message_actions.edit(10**12, "carol", "ghost", body_text="x")
    assert missing.value.status == 404
    assert not MessageVersion.objects.exists()
    assert Message.objects.get(pk=replayed.pk).status == Status.REPLAYED


def test_it_requires_a_reason_to_edit():
    m = _json_message()
    for reason in ("", "   ", None):
        with pytest.raises(message_actions.ActionError) as refused:
            message_actions.edit(m.pk, "carol", reason, body_text='{"order": 2}')
        assert list(refused.value.errors) == ["reason"]
    _unchanged(m)


def _gzip_bomb(inflated_mib: int) -> bytes:
    pack = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
    chunk = b"\0" * (1024 * 1024)
    return b"".join([*(pack.compress(chunk) for _ in range(inflated_mib)), pack.flush()])


def test_editing_a_gzip_bomb_reads_a_bounded_part_of_it_for_the_diff():
    bomb = _gzip_bomb(512)
    m = make_message(body=bomb, content_encoding="gzip")

    tracemalloc.start()
    try:
        message_actions.edit(m.pk, "carol", "defuse", body_base64=base64.b64encode(b"{}").decode())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 64 * 1024 * 1024, f"{peak / 2**20:.0f} MiB to diff a {len(bomb)} byte body"
    diff = AuditEntry.objects.get(action="edit").diff["body"]
    assert (diff["before_size"], diff["after_size"]) == (len(bomb), 2)
    assert bytes(MessageVersion.objects.get(message=m).body) == bomb
