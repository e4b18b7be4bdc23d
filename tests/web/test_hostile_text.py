"""Untrusted text that hides or reorders what follows it, on the list and the message page:
controls and bidi controls shown as escapes, right-to-left text isolated, a name that is not
UTF-8 shown to an operator and edited back exactly (issue 25, defects 1 and 8)."""

import html
import json
import re

import pytest

from dlq.models import Message
from tests.factories import make_message, post

pytestmark = pytest.mark.django_db

NOT_UTF8 = b"\xff\xfe<img src=x>".decode("utf-8", "surrogateescape")  # as the codec keeps it


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def spoofed(**fields) -> Message:
    return make_message(headers={"MT-Fault-ExceptionType": "KeyError",
                                 "MT-Fault-MessageType": "\u202eevil.exe", **fields})  # fmt: skip


def test_a_bidi_control_is_shown_as_an_escape_not_obeyed(viewer):
    message = spoofed()
    for text in (page(viewer, "/messages/"), page(viewer, f"/messages/{message.pk}/")):
        assert "\u202e" not in text  # "exe.live" on screen
        text = text.replace("<wbr>", "")  # the list's names may wrap at their dots
        assert '<span class="esc">\\u202e</span>evil.exe</a>' in text


def test_a_control_character_in_a_header_name_is_shown(viewer):
    message = spoofed(**{"x-nul\x00name": "v"})
    text = page(viewer, f"/messages/{message.pk}/")
    assert '<code>x-nul<span class="esc">\\x00</span>name</code>' in text  # not "x-nulname"
    assert "\x00" not in text


def test_right_to_left_text_is_isolated(viewer):
    message = make_message(headers={"MT-Fault-ExceptionType": "שגיאה.Error"}, routing_key="abc")
    for text in (page(viewer, "/messages/"), page(viewer, f"/messages/{message.pk}/")):
        assert "<bdi>שגיאה.Error</bdi>" in text.replace("<wbr>", "")  # wraps at its dots
        assert "<code>abc</code>" in text  # text that cannot reorder its neighbours stays bare


def test_a_reason_reads_the_same_everywhere(viewer):
    message = make_message(reason="rej\x00ected")
    listed = page(viewer, "/messages/")
    shown = page(viewer, f"/messages/{message.pk}/")
    assert "<td>rej\ufffdected</td>" in listed
    assert "<dt>Reason</dt><dd>rej\ufffdected</dd>" in shown
    assert "reason <strong>rej\ufffdected</strong>" in shown  # the death timeline
    assert not re.search(r">rejected<", listed + shown)  # nowhere as if nothing were there


def test_a_text_body_shows_its_bidi_controls(viewer):
    message = make_message(body="total: \u202e0001\u202c €\nnext line".encode())
    text = page(viewer, f"/messages/{message.pk}/")
    assert (
        'total: <span class="esc">\\u202e</span>0001<span class="esc">\\u202c</span> €\nnext line'
        in text
    )


def edit_fields(text: str) -> dict:
    fields = {}
    for name in ("body", "headers", "properties"):
        found = re.search(rf'<textarea name="edit-{name}"[^>]*>\n?(.*?)</textarea>', text, re.S)
        fields[f"edit-{name}"] = html.unescape(found.group(1))
    fields["edit-body_format"] = "text"
    return fields


def test_an_operator_sees_and_edits_a_header_name_that_is_not_utf8(operator):
    message = make_message(headers={NOT_UTF8: "v", "x-bidi\u202e": "\u202eevil"})
    text = page(operator, f"/messages/{message.pk}/")  # answered 500: the edit form's JSON
    assert '<code><span class="esc">\\xff\\xfe</span>&lt;img src=x&gt;</code>' in text
    fields = edit_fields(text)
    shown = json.loads(fields["edit-headers"])
    assert shown["base64://48aW1nIHNyYz14Pg=="] == {"type": "longstr", "value": "v"}  # as the API
    assert "\u202e" not in fields["edit-headers"] and "x-bidi\\u202e" in fields["edit-headers"]

    shown["added"] = {"type": "longstr", "value": "x"}
    edited = {**fields, "edit-headers": json.dumps(shown), "edit-reason": "add one"}
    response = post(operator, f"/messages/{message.pk}/edit/", edited)
    assert response.status_code == 302
    headers = Message.objects.get(pk=message.pk).headers
    assert headers == {**message.headers, "added": {"type": "longstr", "value": "x"}}
    assert headers[NOT_UTF8] == {"type": "longstr", "value": "v"}  # the same bytes


def test_a_lone_surrogate_typed_into_the_edit_form_is_a_form_error(operator):
    message = make_message()
    fields = edit_fields(page(operator, f"/messages/{message.pk}/"))
    typed = '{"\\udcff": {"type": "nonsense"}}'  # JSON's escape of no character
    response = post(operator, f"/messages/{message.pk}/edit/",
                    {**fields, "edit-headers": typed, "edit-reason": "try"})  # fmt: skip
    assert response.status_code == 400
    assert "headers.\\xff" in response.content.decode()
