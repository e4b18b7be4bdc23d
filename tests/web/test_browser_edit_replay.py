"""Edit then replay in one step, in a real browser (Debian's headless Chromium) against a real
broker: headers edited as rows, one reason, "Save and replay"; the custom target's fields only
for a custom target; a refused edit replays nothing; the typed JSON still edits what rows
cannot. The server's side: test_edit_replay.py."""

import json

import pytest

from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Replay
from tests.browser import log_in, screenshot
from tests.factories import make_message, make_user
from tests.topology import get
from tests.web.test_edit_replay import HEADERS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"


def open_edit(page, live_server, message: Message):
    user = make_user("operator", password=PASSWORD)
    log_in(page, live_server, user.username, PASSWORD)
    page.goto(f"{live_server.url}/messages/{message.pk}/")
    page.locator("summary", has_text="Edit").click()
    return page.locator("#edit-form")


def test_an_operator_edits_rows_and_saves_and_replays_with_one_reason(page, live_server,
                                                                      channel, top):  # fmt: skip
    work = top.queue("work")
    message = make_message(died_in=work, body=b'{"order": 1}', headers=HEADERS,
                           content_type="application/json")  # fmt: skip
    stored = message.headers
    edit = open_edit(page, live_server, message)

    custom = edit.locator("#id_after-exchange")
    assert custom.is_hidden()  # "original" is chosen: no exchange to type
    edit.get_by_label("Another exchange and routing key").check()
    assert custom.is_visible() and custom.is_enabled()
    custom.fill("left-behind")
    edit.get_by_label("The queue where it failed").check()
    assert custom.is_hidden() and custom.is_disabled()  # not sent: not refused either

    edit.locator("#after-route-preview").filter(has_text=work).wait_for()  # where it goes
    edit.locator("#id_edit-body").fill('{"order": 2}')
    assert edit.get_by_label("Type of header retries").input_value() == "int32"
    edit.get_by_label("Value of header tenant").fill("globex")
    edit.get_by_role("button", name="Add a header").click()  # the blank row: it is focused
    page.keyboard.type("fixed-by")
    edit.get_by_label("Value of the new header").last.fill("night shift")
    edit.get_by_role("button", name="Add a header").click()  # one more row, left blank
    assert edit.get_by_label("Name of a new header").count() == 2
    edit.get_by_label("Reason:", exact=True).fill("wrong tenant")
    assert "nested" in edit.locator("#json-only").inner_text()  # rows cannot say a table
    for width in (1280, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        screenshot(page, f"message-edit-replay-{width}")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    edit.get_by_role("button", name="Save and replay").click()

    page.get_by_text("The edit is saved (the previous version is kept) and replayed").wait_for()
    assert page.locator("#status").inner_text() == "replayed"
    screenshot(page, "message-edit-replayed")
    _, props, body = get(channel, work)
    assert body == b'{"order": 2}'
    sent = {k: v for k, v in props.headers.items() if not k.startswith(("dlq-", "x-"))}
    assert sent == {
        **{k: v for k, v in stored.items() if not k.startswith("x-")},
        "tenant": {"type": "longstr", "value": "globex"},
        "fixed-by": {"type": "longstr", "value": "night shift"},
    }
    entries = AuditEntry.objects.exclude(action="sign_in").order_by("id")
    assert [(e.action, e.reason) for e in entries] == [("edit", "wrong tenant"),
                                                        ("replay", "wrong tenant")]  # fmt: skip
    assert json.loads(entries[1].detail)["target"] == "failed_queue"
    history = page.locator("ol.history").inner_text()
    assert "edited by operator-" in history and "replayed by operator-" in history


def test_a_refused_edit_replays_nothing_and_says_why(page, live_server, channel, top):
    work = top.queue("work")
    message = make_message(died_in=work, headers=HEADERS)
    headers_json = message.headers_json
    edit = open_edit(page, live_server, message)

    edit.get_by_label("Value of header retries").fill("three")
    edit.get_by_label("The queue where it failed").check()
    edit.get_by_label("Reason:", exact=True).fill("try")
    edit.get_by_role("button", name="Save and replay").click()

    alert = page.locator("#edit-form [role=alert]")
    alert.filter(has_text="headers.retries: must be a whole number").wait_for()
    alert.filter(has_text="Nothing was saved, nothing was replayed.").wait_for()
    screenshot(page, "message-edit-replay-refused")
    assert page.locator("#edit-form").get_by_label("Value of header retries").input_value() == (
        "three"
    )  # what was typed is still there to fix
    assert channel.queue_declare(work, passive=True).method.message_count == 0
    message.refresh_from_db()
    assert message.status == Status.PARKED and message.headers_json == headers_json
    assert not AuditEntry.objects.exclude(action="sign_in").exists()
    assert not Replay.objects.exists()


def test_the_typed_json_still_edits_a_nested_header(page, live_server):
    message = make_message(headers=HEADERS)
    edit = open_edit(page, live_server, message)
    edit.locator("summary", has_text="Headers as typed JSON").click()
    box = edit.locator("#id_edit-headers")
    headers = json.loads(box.input_value())
    headers["nested"]["value"]["a"]["value"] = 2
    box.fill(json.dumps(headers))
    edit.get_by_label("Reason:", exact=True).fill("nested fix")
    edit.get_by_role("button", name="Save edit").click()

    page.get_by_text("Message edited; the previous version is kept.").wait_for()
    message.refresh_from_db()
    assert message.headers["nested"]["value"]["a"] == {"type": "int8", "value": 2}
    assert message.headers["ratio"] == {"type": "double", "value": 2.0}


def test_the_replay_form_shows_custom_fields_only_for_a_custom_target(page, live_server):
    message = make_message()
    user = make_user("operator", password=PASSWORD)
    log_in(page, live_server, user.username, PASSWORD)
    page.goto(f"{live_server.url}/messages/{message.pk}/")
    page.locator("summary", has_text="Replay").first.click()
    replay = page.locator("#replay-form")
    assert replay.locator("#id_replay-routing_key").is_hidden()
    replay.get_by_label("Another exchange and routing key").check()
    replay.locator("#id_replay-routing_key").wait_for()
    screenshot(page, "message-replay-custom")
