"""The edit form in a real browser (Debian's headless Chromium): saved with only a reason,
it changes nothing and says so, whatever bytes the body holds; the bytes stay as they were.
Chromium's textarea turned NUL into U+FFFD, a lone CR into CRLF, and the save recorded an
edit the next replay would have sent."""

import pytest

from dlq.models import Message
from dlq.models.actions import AuditEntry, MessageVersion
from tests.browser import log_in, screenshot
from tests.factories import make_message, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
NO_CHANGE = "no change: the edit leaves the body, headers and properties as they are"
BODIES = [
    b"id=7\x00\x01\x02\x07\x08\x0b\x0c\x1b[31mred\x1b[0m\x1f;end\x00",  # NUL, C0 controls
    b"first\rsecond",  # a lone CR
    b"first\r\nsecond\nthird",  # CRLF and LF mixed
    b"\n\nafter two newlines\n",  # the HTML parser drops one newline after <textarea>
    b"first\r\nsecond\r\n",
    "\ufeffbom, tab\t, \x7f and \u2028 ünïcode".encode(),
    b"\xff\xfe\x00\x80 not UTF-8",
]


def open_edit(page, live_server, message: Message):
    page.goto(f"{live_server.url}/messages/{message.pk}/")
    page.locator("summary", has_text="Edit").click()
    return page.locator("#edit-form")


@pytest.mark.parametrize("body", BODIES)
def test_a_save_with_only_a_reason_says_no_change_and_keeps_every_byte(page, live_server, body):
    message = make_message(body=body, headers={"note": "nul\x00 cr\r tab\t", "ratio": 0.5},
                           correlation_id="id\x00\r\n", priority=255)  # fmt: skip
    stored = (message.headers_json, message.properties_json)
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)

    edit = open_edit(page, live_server, message)
    edit.get_by_label("Reason:", exact=True).fill("only looking")
    edit.get_by_role("button", name="Save edit").click()

    page.locator("#edit-form").get_by_text(NO_CHANGE).wait_for()
    if body == BODIES[0]:
        screenshot(page, "message-edit-no-change")
    message.refresh_from_db()
    assert bytes(message.body) == body
    assert (message.headers_json, message.properties_json) == stored
    assert not MessageVersion.objects.exists()
    assert not AuditEntry.objects.filter(action="edit").exists()


def test_a_body_with_nul_is_offered_as_base64_and_edited_so(page, live_server):
    message = make_message(body=BODIES[0], priority=255)
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)

    edit = open_edit(page, live_server, message)
    assert edit.get_by_label("Body format").input_value() == "base64"
    assert "a browser's text box would change" in edit.inner_text()
    screenshot(page, "message-edit-base64")
    edit.locator("#id_edit-body").fill("AAEC/w==")  # \x00\x01\x02\xff
    edit.get_by_label("Reason:", exact=True).fill("new bytes")
    edit.get_by_role("button", name="Save edit").click()

    page.get_by_text("Message edited; the previous version is kept.").wait_for()
    message.refresh_from_db()
    assert bytes(message.body) == b"\x00\x01\x02\xff"
    assert message.properties["priority"] == 255
    assert bytes(MessageVersion.objects.get(message=message).body) == BODIES[0]
