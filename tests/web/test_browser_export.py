"""The list page's export in a real browser (headless Chromium): a viewer (or an operator,
whose list has the bulk bar) filters the list without a reload and downloads what the
filter shows, one message a line."""

import json
import re

import pytest

from dlq.models.actions import AuditAction, AuditEntry
from tests.browser import log_in, screenshot
from tests.factories import make_messages, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "a-long-browser-password"


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_a_reader_downloads_what_the_filter_shows(page, live_server, role):
    make_messages(3, queue="noise.dlq")
    shown = make_messages(2, queue="orders.dlq", headers={"tenant": "t-1"})
    user = make_user(role, password=PASSWORD)
    log_in(page, live_server, user.username, PASSWORD)
    page.goto(f"{live_server.url}/messages/")
    page.get_by_label("Queue").fill("orders.dlq")
    page.get_by_label("Queue").dispatch_event("change")
    page.wait_for_url(re.compile(r"queue=orders\.dlq"))
    page.wait_for_function("document.querySelectorAll('table.msg-table tbody tr').length === 2")
    for width in (1280, 1440):
        page.set_viewport_size({"width": width, "height": 800})
        screenshot(page, f"messages-export-{role}-{width}")

    with page.expect_download() as info:
        page.get_by_role("link", name="Export the matching messages (NDJSON)").click()
    download = info.value

    assert re.fullmatch(r"dlq-messages-\d{8}T\d{6}Z\.ndjson", download.suggested_filename)
    lines = [json.loads(line) for line in download.path().read_text("utf-8").splitlines()]
    assert [line["id"] for line in lines] == [m.pk for m in reversed(shown)]
    assert {line["queue"] for line in lines} == {"orders.dlq"}
    assert lines[0]["headers"]["tenant"] == {"type": "longstr", "value": "t-1"}
    entry = AuditEntry.objects.get(action=AuditAction.EXPORT)
    assert entry.actor_name == user.username
    assert json.loads(entry.detail)["count"] == 2
