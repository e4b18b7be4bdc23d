"""An operator's forms on the message page: edit (with its errors), replay to a real queue
with the outcome shown, the route preview, and what the audit and the history keep."""

import json

import pytest

from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, MessageVersion
from tests.factories import make_message, post
from tests.topology import get

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return response.content.decode()


def edit_data(message: Message, **changes) -> dict:
    """The edit form as the page fills it in, with `changes` (edit- prefixed names)."""
    data = {
        "edit-body": bytes(message.body).decode(),
        "edit-body_format": "text",
        "edit-headers": json.dumps(message.headers),
        "edit-properties": json.dumps(message.properties),
        "edit-reason": "fix the order",
    }
    return {**data, **{f"edit-{k}": v for k, v in changes.items()}}


def test_it_edits_the_body_and_keeps_the_previous_version(operator):
    message = make_message(body=b'{"order": 1}\n', content_type="application/json")
    data = edit_data(message, body='{"order": 2}\r\n')  # a browser's line ends
    response = post(operator, f"/messages/{message.pk}/edit/", data, follow=True)
    assert response.status_code == 200
    assert "Message edited" in text(response)
    message.refresh_from_db()
    assert bytes(message.body) == b'{"order": 2}\n'
    assert MessageVersion.objects.get(message=message).body == b'{"order": 1}\n'
    entry = AuditEntry.objects.get(action="edit")
    assert entry.reason == "fix the order" and set(entry.diff) == {"body"}
    page = text(operator.get(f"/messages/{message.pk}/"))
    assert "-{&quot;order&quot;: 1}" in page and "+{&quot;order&quot;: 2}" in page


def test_an_untouched_form_changes_nothing_and_says_so(operator):
    message = make_message(body=b"line one\nline two", headers={"tenant": "acme"})
    data = edit_data(message, body="line one\r\nline two")
    response = post(operator, f"/messages/{message.pk}/edit/", data)
    assert response.status_code == 400
    assert "no change: the edit leaves the body, headers and properties as they are" in text(
        response
    )
    assert not MessageVersion.objects.exists()


def test_it_edits_headers_and_properties_with_their_types(operator):
    message = make_message(headers={"tenant": "acme"})
    headers = {**message.headers, "retries": {"type": "int16", "value": 2}}
    data = edit_data(message, headers=json.dumps(headers),
                     properties=json.dumps({**message.properties, "priority": 4}))  # fmt: skip
    assert post(operator, f"/messages/{message.pk}/edit/", data).status_code == 302
    message.refresh_from_db()
    assert message.headers["retries"] == {"type": "int16", "value": 2}
    assert message.properties["priority"] == 4
    history = text(operator.get(f"/messages/{message.pk}/"))
    assert (
        "headers: <code>retries</code>" in history
        and "properties: <code>priority</code>" in history
    )


@pytest.mark.parametrize(
    "changes, problem",
    [
        ({"reason": " "}, "This field is required"),
        ({"headers": "{not json"}, "is not valid JSON"),
        ({"headers": "[" * 100_000}, "is not valid JSON"),  # deeper than the stack
        ({"properties": '{"a":' * 3000 + "1" + "}" * 3000}, "is not valid JSON"),
        ({"headers": '{"n": {"type": "int8", "value": 999}}'}, "headers.n"),
        ({"headers": '{"n": {"type": {}}}'}, "headers.n"),
        ({"properties": '{"priority": "high"}'}, "priority"),
        ({"body": "%%%", "body_format": "base64"}, "not valid base64"),
        ({"body": "not json"}, "content type is JSON but the body is not"),
    ],
)
def test_bad_edits_are_form_errors(operator, changes, problem):
    message = make_message(body=b"{}", content_type="application/json")
    response = post(operator, f"/messages/{message.pk}/edit/", edit_data(message, **changes))
    assert response.status_code == 400
    assert problem in text(response)
    message.refresh_from_db()
    assert bytes(message.body) == b"{}" and not MessageVersion.objects.exists()


def test_an_edit_of_a_discarded_message_is_a_409(operator):
    message = make_message()
    Message.objects.filter(pk=message.pk).update(status=Status.DISCARDED)
    response = post(operator, f"/messages/{message.pk}/edit/", edit_data(message, body="x"))
    assert response.status_code == 409 and "only parked messages can be edited" in text(response)


def test_it_replays_to_a_real_queue_and_shows_the_outcome(channel, top, operator):
    work = top.queue("work")
    message = make_message(queue=top.name("dlq"), died_in=work, exchange="", routing_key=work,
                           body=b"replay me")  # fmt: skip
    data = {"replay-target": "original", "replay-reason": "consumer fixed"}
    response = post(operator, f"/messages/{message.pk}/replay/", data, follow=True)
    assert "Replay outcome: confirmed" in text(response)
    assert get(channel, work)[2] == b"replay me"
    message.refresh_from_db()
    assert message.status == Status.REPLAYED
    assert '<span class="badge badge-confirmed">confirmed</span>' in text(response)


def test_an_unroutable_replay_says_so_and_stays_parked(top, operator):
    lonely = top.exchange("lonely")
    message = make_message(queue=top.name("dlq"))
    data = {"replay-target": "custom", "replay-exchange": lonely,
            "replay-routing_key": "nobody", "replay-reason": "try"}  # fmt: skip
    response = post(operator, f"/messages/{message.pk}/replay/", data, follow=True)
    assert "Replay outcome: unroutable" in text(response)
    assert "The message stays parked" in text(response)
    message.refresh_from_db()
    assert message.status == Status.PARKED


def test_a_replay_to_an_unknown_destination_is_a_form_error(operator):
    message = make_message(headers={"x-death": {"type": "void", "value": None}})
    Message.objects.filter(pk=message.pk).update(original_exchange=None, failed_queue="")
    data = {"replay-target": "failed_queue", "replay-reason": "try"}
    response = post(operator, f"/messages/{message.pk}/replay/", data)
    assert response.status_code == 400
    assert "the failed queue is unknown" in text(response)


def test_the_route_preview_names_the_queues_and_warns_of_fan_out(top, operator):
    fan = top.exchange("fan", "fanout")
    for suffix in ("a", "b"):
        top.ch.queue_bind(top.queue(suffix), fan)
    message = make_message(queue=top.name("dlq"))
    url = f"/messages/{message.pk}/route/?replay-target=custom&replay-exchange={fan}"
    preview = text(operator.get(url + "&replay-routing_key=x"))
    assert f"<code>{top.name('a')}</code>, <code>{top.name('b')}</code>" in preview
    assert "2 queues would each get a copy" in preview
    lost = f"replay-target=custom&replay-exchange=&replay-routing_key={top.name('none')}"
    nowhere = text(operator.get(f"/messages/{message.pk}/route/?{lost}"))
    assert "unroutable" in nowhere
    bad = operator.get(f"/messages/{message.pk}/route/?replay-target=elsewhere")
    assert bad.status_code == 400 and "target:" in text(bad)


def test_a_body_too_large_for_the_page_is_not_in_the_edit_form(operator):
    body = b"x" * (300 * 1024)
    message = make_message(body=body, headers={"tenant": "acme"})
    page = text(operator.get(f"/messages/{message.pk}/"))
    assert "The body is too large to edit here" in page
    assert len(page) < len(body)
    data = edit_data(
        message,
        headers=json.dumps({**message.headers, "tenant": {"type": "longstr", "value": "beta"}}),
    )
    del data["edit-body"], data["edit-body_format"]
    assert post(operator, f"/messages/{message.pk}/edit/", data).status_code == 302
    message.refresh_from_db()
    assert bytes(message.body) == body and message.headers["tenant"]["value"] == "beta"


def test_an_operator_sees_earlier_versions_and_restores_one(operator, viewer):
    message = make_message(body=b'{"order": 1}\n', content_type="application/json",
                           headers={"tenant": "a"})  # fmt: skip
    post(operator, f"/messages/{message.pk}/edit/", edit_data(message, body='{"order": 2}\n'))
    message.refresh_from_db()
    headers = {**message.headers, "tenant": {"type": "longstr", "value": "<b>"}}
    post(operator, f"/messages/{message.pk}/edit/",
         edit_data(message, headers=json.dumps(headers), reason="tenant b"))  # fmt: skip

    page = text(operator.get(f"/messages/{message.pk}/"))
    assert page.index('id="version-2"') < page.index('id="version-1"')  # newest first
    assert "Reason: tenant b" in page and "Reason: fix the order" in page
    # Version 1 against the current one: the body back to 1, the tenant back to a (escaped).
    one = page[page.index('id="version-1"') :]
    assert "-{&quot;order&quot;: 2}" in one and "+{&quot;order&quot;: 1}" in one
    assert "&lt;b&gt;" in one and "<b>" not in one
    assert "Restore this version" in one
    assert "Restore this version" not in text(viewer.get(f"/messages/{message.pk}/"))

    url = f"/messages/{message.pk}/versions/1/restore/"
    refused = post(operator, url, {"version1-reason": ""})
    assert refused.status_code == 400 and "This field is required" in text(refused)
    assert post(viewer, url, {"version1-reason": "back"}).status_code == 403
    response = post(operator, url, {"version1-reason": "back to the original"}, follow=True)
    assert "Version 1 restored" in text(response)

    message.refresh_from_db()
    assert bytes(message.body) == b'{"order": 1}\n'
    assert message.headers["tenant"] == {"type": "longstr", "value": "a"}
    assert message.versions.count() == 3  # what it replaced is kept in turn
    entry = AuditEntry.objects.filter(action="edit").latest("id")
    assert entry.reason == "back to the original" and set(entry.diff) == {"body", "headers"}
    assert post(operator, f"/messages/{message.pk}/versions/9/restore/",
                {"version9-reason": "x"}).status_code == 404  # fmt: skip

    Message.objects.filter(pk=message.pk).update(status=Status.DISCARDED)
    page = text(operator.get(f"/messages/{message.pk}/"))
    assert "Restore this version" not in page  # only while parked
    assert post(operator, url, {"version1-reason": "again"}).status_code == 409


def test_the_original_of_a_malformed_json_message_can_be_restored(operator):
    message = make_message(body=b'{"order": 1,,}', content_type="application/json")
    post(operator, f"/messages/{message.pk}/edit/", edit_data(message, body='{"order": 1}'))
    message.refresh_from_db()
    assert bytes(message.body) == b'{"order": 1}'
    response = post(operator, f"/messages/{message.pk}/versions/1/restore/",
                    {"version1-reason": "send it as it came"}, follow=True)  # fmt: skip
    assert "Version 1 restored" in text(response)
    message.refresh_from_db()
    assert bytes(message.body) == b'{"order": 1,,}'  # as it arrived, never refused
