"""Edit, discard and restore through the API: validated field by field, 404 and 409, and
what a reader sees afterwards (detail, history, audit)."""

import base64

import pytest

from dlq.actions import message as message_actions
from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, MessageVersion
from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator():
    return client_for(make_user("operator"), token=True)


def _json_message() -> Message:
    return make_message(body=b'{"order": 1}', content_type="application/json",
                        headers={"tenant": "acme"})  # fmt: skip


def _patch(client, message_id, body):
    return client.patch(f"/api/v1/messages/{message_id}", body, content_type="application/json")


def _act(client, message_id, verb, reason="because"):
    body = {"reason": reason} if reason is not None else {}
    return client.post(f"/api/v1/messages/{message_id}/{verb}", body,
                       content_type="application/json")  # fmt: skip


def test_it_edits_the_body_and_a_reader_sees_it_with_history_and_audit(operator):
    m = _json_message()

    response = _patch(operator, m.pk, {"body_text": '{"order": 2}', "reason": "fix the id"})

    assert response.status_code == 200
    assert response.json()["body_text"] == '{"order": 2}'
    viewer = client_for(make_user("viewer"), token=True)
    detail = viewer.get(f"/api/v1/messages/{m.pk}").json()
    assert detail["body_text"] == '{"order": 2}'
    assert detail["size"] == 12
    edited = [e for e in detail["history"] if e["event"] == "edited"]
    assert len(edited) == 1
    assert edited[0]["actor"].startswith("operator-")
    assert edited[0]["detail"]["reason"] == "fix the id"
    assert edited[0]["detail"]["changed"] == ["body"]
    audit = viewer.get("/api/v1/audit", {"message": m.pk}).json()["results"]
    assert [row["action"] for row in audit] == ["edit"]
    assert audit[0]["diff"]["body"]["before"] == '{"order": 1}'
    assert audit[0]["diff"]["body"]["after"] == '{"order": 2}'
    assert MessageVersion.objects.get(message=m).number == 1


def test_it_edits_typed_headers_properties_and_a_binary_body(operator):
    m = _json_message()
    headers = {
        "tenant": {"type": "longstr", "value": "globex"},
        "attempt": {"type": "int8", "value": -3},
        "raw": {"type": "bytes", "base64": base64.b64encode(b"\x00\xff").decode()},
    }
    body = {
        "body_base64": base64.b64encode(b"\x01\x02").decode(),
        "headers": headers,
        "properties": {"content_type": "application/octet-stream", "priority": 5},
        "reason": "binary now",
    }

    response = _patch(operator, m.pk, body)

    assert response.status_code == 200
    detail = response.json()
    assert detail["headers"] == headers
    assert detail["properties"] == {"content_type": "application/octet-stream", "priority": 5}
    assert detail["body_base64"] == "AQI="
    assert detail["content_type"] == "application/octet-stream"


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"body_text": "x"}, {"reason": ["is required"]}),
        ({"body_text": "x", "reason": " "}, {"reason": ["a reason is required"]}),
        (
            {"body_text": "{}", "body_base64": "e30=", "reason": "r"},
            {"body_text": ["give body_text or body_base64, not both"]},
        ),
        ({"body_base64": "not base64!", "reason": "r"}, {"body_base64": ["is not valid base64"]}),
        (
            {"headers": {"a": "plain"}, "reason": "r"},
            {"headers.a": ["Input should be a valid dictionary"]},
        ),
        ({"headers": [], "reason": "r"}, {"headers": ["Input should be a valid dictionary"]}),
    ],
)
def test_it_refuses_bad_input_field_by_field(operator, body, errors):
    m = _json_message()
    response = _patch(operator, m.pk, body)
    assert response.status_code == 400
    assert response.json() == {"detail": "invalid input", "errors": errors}
    assert not MessageVersion.objects.exists()


def test_it_names_every_bad_header_and_property(operator):
    m = _json_message()
    bad_headers = {"n": {"type": "int8", "value": 1000}, "t": {"type": "nope", "value": 1}}
    response = _patch(operator, m.pk, {"headers": bad_headers, "reason": "r"})
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"headers.n", "headers.t"}

    bad_props = {"priority": 300, "delivery_mode": "x", "colour": "red"}
    response = _patch(operator, m.pk, {"properties": bad_props, "reason": "r"})
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {
        "properties.priority", "properties.delivery_mode", "properties.colour"
    }  # fmt: skip


def test_it_keeps_a_json_body_json(operator):
    m = _json_message()
    response = _patch(operator, m.pk, {"body_text": "{broken", "reason": "r"})
    assert response.status_code == 400
    [problem] = response.json()["errors"]["body_text"]
    assert problem.startswith("content type is JSON but the body is not")


def test_it_refuses_an_edit_that_changes_nothing(operator):
    m = _json_message()
    response = _patch(operator, m.pk, {"body_text": '{"order": 1}', "reason": "r"})
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "__all__": ["no change: the edit leaves the body, headers and properties as they are"]
    }


def test_it_answers_409_to_an_edit_of_a_message_that_is_not_parked(operator):
    m = _json_message()
    message_actions.discard(m.pk, "ops", "junk")
    response = _patch(operator, m.pk, {"body_text": "{}", "reason": "r"})
    assert response.status_code == 409
    assert response.json() == {
        "detail": f"message {m.pk} is discarded; only parked messages can be edited"
    }


def test_it_answers_404_to_an_edit_of_an_unknown_message(operator):
    response = _patch(operator, 987654321, {"body_text": "{}", "reason": "r"})
    assert response.status_code == 404
    assert response.json() == {"detail": "message 987654321 does not exist"}


def test_it_discards_and_restores_with_a_reason(operator):
    m = make_message()

    discarded = _act(operator, m.pk, "discard", "poison message")
    assert discarded.status_code == 200
    assert discarded.json()["status"] == "discarded"
    restored = _act(operator, m.pk, "restore", "it was fine")
    assert restored.status_code == 200
    assert restored.json()["status"] == "parked"

    events = [(e["event"], e["detail"].get("reason")) for e in restored.json()["history"]]
    assert events[1:] == [("discarded", "poison message"), ("restored", "it was fine")]
    rows = AuditEntry.objects.order_by("id").values_list("action", "reason", "message_ids_json")
    assert list(rows) == [
        ("discard", "poison message", f"[{m.pk}]"),
        ("restore", "it was fine", f"[{m.pk}]"),
    ]


def test_it_answers_409_to_a_discard_or_restore_the_status_does_not_allow(operator):
    m = make_message()
    response = _act(operator, m.pk, "restore")
    assert response.status_code == 409
    assert response.json() == {
        "detail": f"message {m.pk} is parked; only discarded messages can be restored"
    }
    _act(operator, m.pk, "discard")
    response = _act(operator, m.pk, "discard")
    assert response.status_code == 409
    assert Message.objects.get(pk=m.pk).status == Status.DISCARDED


@pytest.mark.parametrize("verb", ["discard", "restore"])
def test_it_answers_404_and_400_to_discard_and_restore(operator, verb):
    assert _act(operator, 987654321, verb).status_code == 404
    m = make_message()
    response = _act(operator, m.pk, verb, reason=None)
    assert response.status_code == 400
    assert response.json()["errors"] == {"reason": ["is required"]}
    response = operator.post(f"/api/v1/messages/abc/{verb}", {"reason": "r"},
                             content_type="application/json")  # fmt: skip
    assert response.status_code == 400
    assert response.json()["errors"] == {"id": ["must be a whole number"]}


@pytest.mark.parametrize(
    ("typed", "where"),
    [
        ({"base64": "", "type": {}, "value": None}, "headers.x"),  # found by the fuzzer: a 500
        ({"type": ["longstr"]}, "headers.x"),
        ({"type": "table", "value": {"a": {"type": {}}}}, "headers.x.a"),
        ({"type": "array", "value": [{"type": "int8", "value": 1}, {"value": 2}]}, "headers.x[1]"),
    ],
)
def test_it_refuses_a_header_of_the_wrong_shape(operator, typed, where):
    m = _json_message()
    response = _patch(operator, m.pk, {"headers": {"x": typed}, "reason": "r"})
    assert response.status_code == 400
    [problem] = response.json()["errors"]["headers.x"]
    assert problem.startswith(f'{where}: needs {{"type": one of longstr, bytes')


def test_it_refuses_an_out_of_range_timestamp(operator):
    m = _json_message()  # found by probing: 2**64 reached struct.pack (a 500)
    response = _patch(operator, m.pk, {"properties": {"timestamp": 2**64}, "reason": "r"})
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "properties.timestamp": ["must be at most 18446744073709551615"]
    }
