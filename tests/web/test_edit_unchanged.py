"""The edit form sends back what it was given: a body a browser's textarea would change is
offered as base64, and a save with only a reason is refused as "no change" (no version, no
audit row, the bytes as they were). The real browser's side is tests/web/test_browser_edit.py;
here the page's own form is sent back as the HTML standard has a browser send it."""

import base64
import re
from html import unescape

import pytest

from dlq.models.actions import AuditEntry, MessageVersion
from tests.factories import make_message, post

pytestmark = pytest.mark.django_db

NO_CHANGE = "no change: the edit leaves the body, headers and properties as they are"
TEXTAREA = re.compile(r'<textarea name="edit-(\w+)"[^>]*>(.*?)</textarea>', re.S)
SELECTED = re.compile(r'<option value="(\w+)" selected>')


def as_a_browser_sends(text: str) -> str:
    """A textarea's content as a browser submits it: the HTML parser drops the newline right
    after <textarea>, turns NUL into U+FFFD and CR or CRLF into LF; the form sends CRLF."""
    text = text.removeprefix("\n").replace("\x00", "\ufffd")
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\r\n")


def page_form(client, message) -> dict:
    """The edit form as the message page fills it in, sent back with only a reason typed."""
    page = client.get(f"/messages/{message.pk}/").content.decode()
    form = page[page.index('id="edit-form"') :]
    data = {f"edit-{name}": as_a_browser_sends(unescape(value))
            for name, value in TEXTAREA.findall(form)}  # fmt: skip
    data["edit-body_format"] = SELECTED.search(form).group(1)
    return data | {"edit-reason": "only looking"}


BODIES = {
    "NUL and other C0 controls": b"id=7\x00\x01\x02\x07\x08\x0b\x0c\x1b[0m\x1f;end",
    "a lone CR": b"first\rsecond",
    "CRLF and LF mixed": b"first\r\nsecond\nthird",
    "a leading newline": b"\n\nafter two newlines\n",
    "CRLF line ends": b"first\r\nsecond\r\n",
    "not UTF-8": b"\xff\xfe\x00\x80",
    "bidi, DEL and C1 controls": "total: \u202e0001\u202c \x7f\u0085".encode(),
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_a_save_with_only_a_reason_is_no_change_and_keeps_every_byte(operator, body):
    message = make_message(body=body, headers={"tenant": "acme"}, priority=3)
    headers_json, properties_json = message.headers_json, message.properties_json

    response = post(operator, f"/messages/{message.pk}/edit/", page_form(operator, message))

    assert response.status_code == 400
    assert NO_CHANGE in response.content.decode()
    message.refresh_from_db()
    assert bytes(message.body) == body
    assert (message.headers_json, message.properties_json) == (headers_json, properties_json)
    assert not MessageVersion.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    "name",
    ["NUL and other C0 controls", "a lone CR", "CRLF and LF mixed", "bidi, DEL and C1 controls"],
)
def test_a_body_the_textarea_would_change_is_offered_as_base64(operator, name):
    message = make_message(body=BODIES[name])
    form = page_form(operator, message)
    assert form["edit-body_format"] == "base64"
    assert base64.b64decode(form["edit-body"]) == BODIES[name]
    assert (
        "a browser's text box would change or hide"
        in operator.get(f"/messages/{message.pk}/").content.decode()
    )


def test_plain_text_stays_text(operator):
    message = make_message(body="tab\tand ünïcode\nline two\n".encode())
    form = page_form(operator, message)
    assert form["edit-body_format"] == "text"
    assert form["edit-body"] == "tab\tand ünïcode\r\nline two\r\n"


def test_base64_pasted_in_wrapped_lines_is_the_body_it_encodes(operator):
    message = make_message(body=b"\x00old")
    new = bytes(range(256)) * 2
    wrapped = base64.encodebytes(new).decode().replace("\n", "\r\n")  # 76-character lines
    data = page_form(operator, message) | {"edit-body": wrapped, "edit-reason": "new bytes"}

    assert post(operator, f"/messages/{message.pk}/edit/", data).status_code == 302
    message.refresh_from_db()
    assert bytes(message.body) == new


def test_a_body_as_it_came_is_never_refused_when_only_headers_change(operator):
    """A JSON content type over a body that is not JSON arrived so: saving the form with the
    body untouched and a header changed must not refuse the body."""
    message = make_message(body=b"not json", content_type="application/json")
    data = page_form(operator, message)
    data["edit-headers"] = data["edit-headers"].replace('"rejected"', '"fixed by hand"')

    response = post(operator, f"/messages/{message.pk}/edit/", data)

    assert response.status_code == 302, response.content.decode()
    message.refresh_from_db()
    assert bytes(message.body) == b"not json"
    assert set(AuditEntry.objects.get(action="edit").diff) == {"headers"}


def test_a_message_with_priority_255_is_edited_in_the_form(operator):
    message = make_message(body=b"x", priority=255)
    data = page_form(operator, message) | {"edit-body": "y", "edit-reason": "fix"}

    response = post(operator, f"/messages/{message.pk}/edit/", data)

    assert response.status_code == 302, response.content.decode()
    message.refresh_from_db()
    assert bytes(message.body) == b"y" and message.properties["priority"] == 255
    data = page_form(operator, message) | {"edit-reason": "lower it"}
    data["edit-properties"] = data["edit-properties"].replace("255", "200")
    assert post(operator, f"/messages/{message.pk}/edit/", data).status_code == 302
    message.refresh_from_db()
    assert message.properties["priority"] == 200


def test_a_message_with_delivery_mode_0_is_edited_in_the_form(operator):
    message = make_message(body=b"x", delivery_mode=0)
    data = page_form(operator, message) | {"edit-body": "y", "edit-reason": "fix"}

    response = post(operator, f"/messages/{message.pk}/edit/", data)

    assert response.status_code == 302, response.content.decode()
    message.refresh_from_db()
    assert bytes(message.body) == b"y" and message.properties["delivery_mode"] == 0
