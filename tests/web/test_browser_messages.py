"""The messages pages in a real browser (Debian's headless Chromium) against a live server:
filter and search without a reload, open a message, edit and replay it to a real queue,
discard and restore, a viewer's read-only page, and an XSS payload that stays text."""

import re
from pathlib import Path

import pytest

from dlq.actions import message as message_actions
from dlq.models import Message, Status
from tests.browser import forged_post, log_in, screenshot
from tests.factories import make_message, make_messages, make_user
from tests.topology import get

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
XSS = "<script>alert(1)</script><img src=x onerror=alert(1)>"


def operator_page(page, live_server):
    user = make_user("operator", password=PASSWORD)
    log_in(page, live_server, user.username, PASSWORD)
    return page


def rows(page) -> list[str]:
    return page.locator("table.msg-table tbody tr").all_inner_texts()


def test_an_operator_filters_searches_edits_and_replays(page, live_server, channel, top):
    work = top.queue("work")
    parking = top.name("dlq")
    make_messages(3, queue=top.name("other"), body=b'{"noise": true}')
    target = make_message(queue=parking, died_in=work, exchange="", routing_key=work,
                          body=b'{"sku": "ZEBRA-42"}', content_type="application/json")  # fmt: skip
    operator_page(page, live_server)

    page.get_by_role("link", name="Messages", exact=True).click()
    page.locator("table.msg-table").wait_for()
    assert len(rows(page)) == 4
    page.evaluate("window.stillTheSamePage = true")  # gone after a full page load
    page.get_by_role("button", name="count them").click()
    page.locator("#match-count").filter(has_text="4 messages match").wait_for()
    page.get_by_label("Select all messages on this page").check()
    assert page.locator("input.row-select:checked").count() == 4
    screenshot(page, "messages-list")

    page.get_by_label("Queue").fill(parking)
    page.get_by_label("Queue").dispatch_event("change")
    page.wait_for_url(re.compile(rf"queue={re.escape(parking)}"))
    page.wait_for_function("document.querySelectorAll('table.msg-table tbody tr').length === 1")
    page.get_by_label("Search body and headers").fill("ZEBRA")
    page.wait_for_url(re.compile(r"q=ZEBRA"))
    assert len(rows(page)) == 1 and str(target.pk) in rows(page)[0]
    page.get_by_label("Received after").fill("yesterday")
    page.get_by_role("button", name="Filter").click()
    page.get_by_role("alert").filter(has_text="received_after: must be an ISO 8601").wait_for()
    assert page.evaluate("window.stillTheSamePage") is True
    page.get_by_label("Received after").fill("")
    page.get_by_role("button", name="Filter").click()
    page.locator("table.msg-table").wait_for()

    page.get_by_role("link", name=str(target.pk), exact=True).click()
    page.get_by_role("heading", name=f"Message {target.pk}").wait_for()
    assert "ZEBRA-42" in page.locator("#body").inner_text()
    screenshot(page, "message-detail")

    page.locator("summary", has_text="Edit").click()
    edit = page.locator("#edit-form")
    edit.locator("#id_edit-body").fill('{"sku": "ZEBRA-43"}')
    edit.get_by_label("Reason:", exact=True).fill("wrong sku")
    edit.get_by_role("button", name="Save edit").click()
    page.get_by_text("Message edited; the previous version is kept.").wait_for()
    assert "ZEBRA-43" in page.locator("#body").inner_text()

    page.locator("summary", has_text="Replay").click()
    replay = page.locator("#replay-form")
    replay.locator("#route-preview").filter(has_text=work).wait_for()
    replay.get_by_label("Reason").fill("consumer fixed")
    replay.get_by_role("button", name="Replay").click()
    page.get_by_text("Replay outcome: confirmed").wait_for()
    assert page.locator("#status").inner_text() == "replayed"
    screenshot(page, "message-replayed")
    assert get(channel, work)[2] == b'{"sku": "ZEBRA-43"}'


def test_an_operator_discards_and_restores(page, live_server):
    message = make_message()
    operator_page(page, live_server)
    page.goto(f"{live_server.url}/messages/{message.pk}/")

    page.locator("summary", has_text="Discard").click()
    page.locator("#discard-form").get_by_label("Reason").fill("poison")
    page.locator("#discard-form").get_by_role("button", name="Discard").click()
    page.get_by_text("Message discarded; it can be restored.").wait_for()
    assert page.locator("#status").inner_text() == "discarded"

    page.locator("summary", has_text="Restore").click()
    page.locator("#restore-form").get_by_label("Reason").fill("it was fine")
    page.locator("#restore-form").get_by_role("button", name="Restore").click()
    page.get_by_text("Message restored: it is parked again.").wait_for()
    assert Message.objects.get(pk=message.pk).status == Status.PARKED
    history = page.locator("ol.history").inner_text()
    assert "discarded by operator-" in history and "restored by operator-" in history


def test_a_viewer_sees_no_action_and_no_selection(page, live_server):
    message = make_message()
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)

    page.goto(f"{live_server.url}/messages/")
    page.locator("table.msg-table").wait_for()
    assert page.get_by_role("checkbox").count() == 0
    assert page.get_by_role("button", name=re.compile("Replay|Discard")).count() == 0
    page.goto(f"{live_server.url}/messages/{message.pk}/")
    page.get_by_role("heading", name=f"Message {message.pk}").wait_for()
    assert page.locator("form[method=post]").filter(has=page.locator("textarea")).count() == 0
    assert page.get_by_role("button", name=re.compile("Replay|Discard|Save|Restore")).count() == 0
    assert page.get_by_role("link", name="Download the raw bytes").count() == 1
    screenshot(page, "message-detail-viewer")
    assert forged_post(page, f"/messages/{message.pk}/discard/") == 403
    assert Message.objects.get(pk=message.pk).status == Status.PARKED


def test_an_xss_payload_in_body_and_headers_stays_text(page, live_server):
    message = make_message(body=XSS.encode(), headers={XSS: XSS}, correlation_id=XSS[:60])
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    operator_page(page, live_server)

    page.goto(f"{live_server.url}/messages/?q=script")
    page.locator("table.msg-table").wait_for()
    title = page.title()
    page.goto(f"{live_server.url}/messages/{message.pk}/")
    page.get_by_role("heading", name=f"Message {message.pk}").wait_for()
    assert XSS in page.locator("#body").inner_text()
    assert XSS in page.locator("table.fields").nth(1).inner_text()
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("main script").count() == 1  # only messages.js
    assert dialogs == []
    assert (
        page.title() == f"Message {message.pk} · DLQ Console" and title == "Messages · DLQ Console"
    )


def test_the_message_page_answers_why_it_died_first(browser, live_server):
    """A reader in Tokyo on an ordinary laptop screen: the failure is on screen without
    scrolling, x-death is its timeline (the typed value one click away), times are local."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, timezone_id="Asia/Tokyo")
    page = context.new_page()
    trace = "\n".join(["java.lang.IllegalStateException: stock is negative"]
                      + [f"\tat com.acme.Frame{i}.call" for i in range(30)])  # fmt: skip
    message = make_message(
        headers={"x-exception-message": "stock is negative", "x-exception-stacktrace": trace,
                 "__TypeId__": "com.acme.ReserveStock"},
        timestamp=1_700_000_000,  # 2023-11-14 22:13:20 UTC, 07:13:20 the next day in Tokyo
    )  # fmt: skip
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)
    page.goto(f"{live_server.url}/messages/{message.pk}/")

    why = page.get_by_role("heading", name="Why it died")
    for shown in (why, page.get_by_text("java.lang.IllegalStateException", exact=True),
                  page.get_by_text("died in orders", exact=False).first):  # fmt: skip
        box = shown.bounding_box()
        assert box and box["y"] + box["height"] <= 800, "below the fold"
    assert page.locator("#message-type").inner_text() == "com.acme.ReserveStock"
    assert page.get_by_text("Frame20.call").first.is_visible() is False  # behind "whole trace"

    raw = page.locator("details.folded", has_text="shown above as the death timeline")
    assert raw.locator("pre").is_visible() is False
    raw.locator("summary").click()
    assert '"reason"' in raw.locator("pre").inner_text()

    stamp = page.locator('table.fields time[datetime="2023-11-14T22:13:20+00:00"]')
    assert stamp.inner_text() == "2023-11-15 07:13:20 UTC+09:00"
    assert stamp.get_attribute("title").startswith("2023-11-14 22:13:20 UTC")
    screenshot(page, "message-detail-why")
    context.close()


def test_an_operator_restores_an_earlier_version(page, live_server):
    message = make_message(body=b'{"sku": "OLD-1"}', content_type="application/json")
    message_actions.edit(message.pk, "erin", "wrong fix", body_text='{"sku": "BAD-2"}')
    operator_page(page, live_server)
    page.goto(f"{live_server.url}/messages/{message.pk}/")

    version = page.locator("#version-1")
    assert "Reason: wrong fix" in version.inner_text()
    version.get_by_text("What restoring it would change").click()
    assert '+{"sku": "OLD-1"}' in version.locator("pre.diff").inner_text()
    version.get_by_label("Reason").fill("back to what arrived")
    version.get_by_role("button", name="Restore this version").click()
    page.get_by_text("Version 1 restored").wait_for()

    message.refresh_from_db()
    assert bytes(message.body) == b'{"sku": "OLD-1"}'
    assert '"OLD-1"' in page.locator("#body").inner_text()
    assert page.locator("#version-2").count() == 1  # the replaced version is kept


def test_a_symfony_envelope_is_shown_readably_and_stays_text(page, live_server):
    """A PhpSerializer body recorded from the real application, its message's invoice id
    turned into markup: the page shows the envelope's class, failure and properties."""
    recorded = Path(__file__).parent.parent / "frameworks/symfony/failed_php_body.bin"
    payload = "<img src=x onerror=alert(1)>"
    body = recorded.read_bytes().replace(
        b's:8:\\"INV-0001\\"', f's:{len(payload)}:\\"{payload}\\"'.encode(), 1
    )
    delay = "delay_async_async_200_retry"
    message = make_message(queue="failed", body=body, died_in=delay, reason="expired",
                           exchange="delays", routing_key=delay, delivered_key="async")  # fmt: skip
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)
    page.goto(f"{live_server.url}/messages/{message.pk}/")

    section = page.locator("#symfony")
    section.get_by_role("heading", name="Symfony Messenger").wait_for()
    assert "App\\Message\\SubmitInvoice" in section.inner_text()
    assert "after failing on transport async (queue async)" in section.inner_text()
    assert "retry 1 at 2026-11-24 23:52:36" in section.inner_text()
    properties = section.get_by_role("table", name="The message's properties")
    assert payload in properties.inner_text()
    assert page.locator("img[src=x]").count() == 0 and dialogs == []
    assert page.locator("#message-type").inner_text() == "App\\Message\\SubmitInvoice"
    screenshot(page, "message-detail-symfony")
