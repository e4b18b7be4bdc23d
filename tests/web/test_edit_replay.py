"""Edit then replay in one step: the message page's edit form, its headers as rows (the typed
JSON kept for what rows cannot say), saved and replayed with one reason by one POST. The
edit is audited as an edit, the replay as a replay; a refused edit replays nothing; a failed
replay leaves the edit saved and says so. The real browser's side: test_browser_edit_replay.py.
"""

import base64
import json

import pytest
from django.test import Client

from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, MessageVersion, Replay
from tests.factories import client_for, make_message, make_user, post
from tests.topology import get
from tests.web.test_hostile_pages import edit_form

pytestmark = pytest.mark.django_db

HEADERS = {
    "tenant": {"type": "longstr", "value": "acme"},
    "retries": {"type": "int32", "value": 3},
    "ratio": {"type": "double", "value": 2.0},
    "small": {"type": "float", "value": 0.10000000149011612},
    "price": {"type": "decimal", "value": "12.50"},
    "sent": {"type": "timestamp", "value": 1_700_000_000},
    "raw": {"type": "bytes", "base64": base64.b64encode(b"\x00\xff").decode()},
    "flag": {"type": "bool", "value": False},
    "nothing": {"type": "void", "value": None},
    "nested": {"type": "table", "value": {"a": {"type": "int8", "value": 1}}},
    "bidi\u202ename": {"type": "longstr", "value": "hidden name"},
}


def page(client, message: Message) -> dict:
    """The edit form as the page fills it in: body, rows, JSON, properties."""
    return edit_form(client.get(f"/messages/{message.pk}/").content.decode())


def row_of(form: dict, name: str) -> str:
    """The form prefix of the row that edits header `name` ("edit-h-3")."""
    return next(k.removesuffix("-was") for k, v in form.items() if k.endswith("-was") and v == name)


def new_row(form: dict) -> str:
    return f"edit-h-{len([k for k in form if k.endswith('-was')]) + 1}"


def save_and_replay(client, message, form, follow=True, **fields):
    data = {**form, "then": "replay", "edit-reason": "fix tenant and retry", **fields}
    return post(client, f"/messages/{message.pk}/edit/", data, follow=follow)


def text(response) -> str:
    return response.content.decode()


def test_one_post_saves_the_edit_and_replays_it_with_one_reason(channel, top, operator):
    work = top.queue("work")
    message = make_message(died_in=work, body=b'{"order": 1}', headers=HEADERS,
                           content_type="application/json")  # fmt: skip
    stored = message.headers
    form = page(operator, message)
    tenant, added = row_of(form, "tenant"), new_row(form)

    response = save_and_replay(operator, message, form, **{
        "edit-body": '{"order": 2}', f"{tenant}-value": "globex",
        f"{added}-name": "fixed-by", f"{added}-type": "longstr", f"{added}-value": "night shift",
        "after-target": "failed_queue"})  # fmt: skip

    assert "The edit is saved (the previous version is kept) and replayed" in text(response)
    assert "Replay outcome: confirmed" in text(response)
    _, props, body = get(channel, work)
    assert body == b'{"order": 2}'
    replay = Replay.objects.get(message=message)
    sent = {k: v for k, v in props.headers.items() if not k.startswith(("dlq-", "x-"))}
    assert sent == {
        **{k: v for k, v in stored.items() if not k.startswith("x-")},
        "tenant": {"type": "longstr", "value": "globex"},  # in its place, the rest as stored
        "fixed-by": {"type": "longstr", "value": "night shift"},
    }
    assert props.headers["dlq-replay-id"]["value"] == replay.replay_id
    message.refresh_from_db()
    assert message.status == Status.REPLAYED
    assert list(message.headers) == [*stored, "fixed-by"]  # an edited header keeps its place
    entries = AuditEntry.objects.order_by("id")
    assert [(e.action, e.reason) for e in entries] == [
        ("edit", "fix tenant and retry"),
        ("replay", "fix tenant and retry"),
    ]
    assert set(entries[0].diff["headers"]) == {"tenant", "fixed-by"}
    assert bytes(MessageVersion.objects.get(message=message).body) == b'{"order": 1}'


def test_rows_left_as_they_were_keep_every_type_and_byte(operator):
    message = make_message(headers=HEADERS)
    headers_json = message.headers_json
    form = page(operator, message)
    for name, shown in [("ratio", "2.0"), ("sent", "2023-11-14T22:13:20Z"), ("raw", "AP8="),
                        ("flag", "false"), ("nothing", "")]:  # fmt: skip
        assert form[f"{row_of(form, name)}-value"] == shown
    assert not any(v in ("nested", "bidi\u202ename") for k, v in form.items() if "-was" in k)

    response = post(operator, f"/messages/{message.pk}/edit/",
                    {**form, "edit-body": "new", "edit-reason": "body only"})  # fmt: skip
    assert response.status_code == 302
    message.refresh_from_db()
    assert bytes(message.body) == b"new"
    assert message.headers_json == headers_json  # not rewritten: byte for byte as it came


def test_a_row_keeps_its_value_renamed_and_takes_a_new_type(operator):
    message = make_message(headers=HEADERS)
    form = page(operator, message)
    ratio, retries, flag = row_of(form, "ratio"), row_of(form, "retries"), row_of(form, "flag")
    data = {**form, f"{ratio}-name": "factor", f"{retries}-type": "int64",
            f"{flag}-remove": "1", "edit-reason": "rename"}  # fmt: skip
    assert post(operator, f"/messages/{message.pk}/edit/", data).status_code == 302
    message.refresh_from_db()
    assert message.headers["factor"] == {"type": "double", "value": 2.0}
    assert message.headers["retries"] == {"type": "int64", "value": 3}
    assert "flag" not in message.headers and "ratio" not in message.headers
    assert message.headers["bidi\u202ename"] == HEADERS["bidi\u202ename"]  # no row: kept


@pytest.mark.parametrize(
    ("header", "type_", "value", "problem"),
    [
        ("retries", "int32", "three", "must be a whole number"),
        ("retries", "int8", "300", "outside the int8 range"),
        ("flag", "bool", "maybe", "must be true or false"),
        ("sent", "timestamp", "yesterday", "must be a UTC time"),
        ("raw", "bytes", "not base64!", "not base64"),
    ],
)
def test_a_refused_edit_replays_nothing(channel, top, operator, header, type_, value, problem):
    work = top.queue("work")
    message = make_message(died_in=work, headers=HEADERS)
    headers_json = message.headers_json
    form = page(operator, message)
    row = row_of(form, header)
    response = save_and_replay(operator, message, form, follow=False, **{
        f"{row}-type": type_, f"{row}-value": value, "after-target": "failed_queue"})  # fmt: skip
    assert response.status_code == 400
    assert problem in text(response)
    assert "Nothing was saved, nothing was replayed." in text(response)
    assert channel.queue_declare(work, passive=True).method.message_count == 0
    message.refresh_from_db()
    assert message.status == Status.PARKED and message.headers_json == headers_json
    assert not AuditEntry.objects.exists() and not Replay.objects.exists()


def test_save_and_replay_with_nothing_changed_replays_nothing(channel, top, operator):
    work = top.queue("work")
    message = make_message(died_in=work, headers=HEADERS)
    response = save_and_replay(operator, message, page(operator, message), follow=False,
                               **{"after-target": "failed_queue"})  # fmt: skip
    assert response.status_code == 400
    assert "no change" in text(response)
    assert "Nothing was saved, nothing was replayed." in text(response)
    assert not AuditEntry.objects.exists() and not Replay.objects.exists()


def test_a_failed_replay_keeps_the_edit_and_says_so(top, operator):
    lonely = top.exchange("lonely")
    message = make_message(body=b"old")
    response = save_and_replay(operator, message, page(operator, message), **{
        "edit-body": "new", "after-target": "custom", "after-exchange": lonely,
        "after-routing_key": "nobody"})  # fmt: skip
    assert ("The edit is saved (the previous version is kept), but the replay failed. "
            "Replay outcome: unroutable") in text(response)  # fmt: skip
    message.refresh_from_db()
    assert (bytes(message.body), message.status) == (b"new", Status.PARKED)
    assert list(AuditEntry.objects.order_by("id").values_list("action", flat=True)) == [
        "edit", "replay"]  # fmt: skip


def test_a_target_that_cannot_be_resolved_saves_nothing(operator):
    message = make_message(body=b"old")
    Message.objects.filter(pk=message.pk).update(failed_queue="")
    response = save_and_replay(operator, message, page(operator, message), follow=False,
                               **{"edit-body": "new", "after-target": "failed_queue"})  # fmt: skip
    assert response.status_code == 400
    assert "the failed queue is unknown" in text(response)
    assert "Nothing was saved, nothing was replayed." in text(response)
    message.refresh_from_db()
    assert bytes(message.body) == b"old" and not AuditEntry.objects.exists()


def test_custom_fields_for_another_target_are_refused(operator):
    message = make_message(body=b"old")
    response = save_and_replay(operator, message, page(operator, message), follow=False, **{
        "edit-body": "new", "after-target": "original", "after-exchange": "stale"})  # fmt: skip
    assert response.status_code == 400
    assert "exchange and routing key apply to a custom target only" in text(response)
    message.refresh_from_db()
    assert bytes(message.body) == b"old"


def test_the_json_fallback_still_edits_what_rows_cannot(operator):
    message = make_message(headers=HEADERS)
    form = page(operator, message)
    headers = json.loads(form["edit-headers"])
    headers["nested"]["value"]["a"]["value"] = 2
    data = {**form, "edit-headers": json.dumps(headers), "edit-reason": "nested"}
    assert post(operator, f"/messages/{message.pk}/edit/", data).status_code == 302
    message.refresh_from_db()
    assert message.headers["nested"]["value"]["a"] == {"type": "int8", "value": 2}


def test_headers_changed_both_ways_are_refused(operator):
    message = make_message(headers=HEADERS)
    form = page(operator, message)
    headers = {**json.loads(form["edit-headers"]), "from-json": {"type": "longstr", "value": "j"}}
    data = {**form, "edit-headers": json.dumps(headers), "edit-reason": "both",
            f"{row_of(form, 'tenant')}-value": "rows"}  # fmt: skip
    response = post(operator, f"/messages/{message.pk}/edit/", data)
    assert response.status_code == 400
    assert "changed both in the rows and as JSON" in text(response)
    assert not AuditEntry.objects.exists()


def test_a_viewer_cannot_and_a_post_without_csrf_is_refused(operator, viewer):
    message = make_message(body=b"old")
    form = {**page(operator, message), "edit-body": "new", "then": "replay",
            "edit-reason": "r", "after-target": "original"}  # fmt: skip
    assert post(viewer, f"/messages/{message.pk}/edit/", form).status_code == 403
    forged = Client(enforce_csrf_checks=True)
    forged.force_login(make_user("operator"))
    assert forged.post(f"/messages/{message.pk}/edit/", form).status_code == 403
    message.refresh_from_db()
    assert bytes(message.body) == b"old" and not AuditEntry.objects.exists()
    assert "Save and replay" not in text(client_for(make_user("viewer")).get(
        f"/messages/{message.pk}/"))  # fmt: skip


def test_bad_json_is_shown_again_open_with_its_error(operator):
    message = make_message(headers=HEADERS)
    data = {**page(operator, message), "edit-headers": "{not json", "edit-reason": "typo"}
    response = post(operator, f"/messages/{message.pk}/edit/", data)
    assert response.status_code == 400
    assert "is not valid JSON" in text(response)
    assert '<details class="as-json" open>' in text(response)
    assert '<details class="as-json">' in text(operator.get(f"/messages/{message.pk}/"))
