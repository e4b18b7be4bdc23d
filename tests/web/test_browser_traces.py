"""A message's trace in a real browser: the link into the tracing UI opens in a new tab
without handing it the console's window or address, and "same trace" lists the others."""

import re

import pytest

from tests.browser import log_in, screenshot
from tests.factories import make_message, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "a-long-browser-password"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


def test_a_viewer_follows_a_message_to_its_trace_and_to_the_same_trace(page, live_server, settings):
    settings.DLQ_TRACE_URL = "https://tempo.example/explore?orgId=1&traceId={trace_id}"
    first = make_message(queue="orders.dlq", headers={"traceparent": f"00-{TRACE}-{SPAN}-01"})
    make_message(queue="billing.dlq")  # another trace's
    second = make_message(queue="billing.dlq", headers={"sentry-trace": f"{TRACE}-{SPAN}"})
    user = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, user.username, PASSWORD)

    page.goto(f"{live_server.url}/messages/{first.pk}/")
    trace = page.locator("#trace")
    link = trace.get_by_role("link", name=TRACE)
    assert link.get_attribute("href") == (f"https://tempo.example/explore?orgId=1&traceId={TRACE}")
    assert link.get_attribute("target") == "_blank"
    assert link.get_attribute("rel") == "noopener noreferrer"
    assert link.is_visible() and trace.bounding_box()["width"] < 1280
    screenshot(page, "message-trace")

    trace.get_by_role("link", name="same trace").click()
    page.wait_for_url(re.compile(rf"/messages/\?trace_id={TRACE}$"))
    page.locator("table.msg-table").wait_for()
    listed = page.locator("table.msg-table tbody tr").all_inner_texts()
    assert len(listed) == 2
    assert str(second.pk) in listed[0] and str(first.pk) in listed[1]
    assert page.get_by_label("Trace id").input_value() == TRACE
    screenshot(page, "messages-same-trace")
