"""Drained queues that look like work queues, in a real browser (issue 26): the overview
and the topology page warn with why, and the message page refuses a replay into a queue the
console drains until the operator ticks the override that explains the loop."""

import pika
import pytest
from playwright.sync_api import expect

from dlq.models import Status
from dlq.models.actions import AuditEntry
from tests.browser import log_in, screenshot
from tests.drainproc import wait_for
from tests.factories import make_message, make_user
from tests.topology import listed

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "a-long-browser-password"


@pytest.fixture
def orders(settings, rabbit, top):
    """`DLQ_QUEUES=orders*` over a service's work queue (consumed by orders-service), its
    retry queue (TTL, back to work) and its parking queue."""
    settings.DLQ_QUEUES = [top.name("orders*")]
    work = top.queue("orders")
    retry = top.queue("orders.retry", **{"x-message-ttl": 5000, "x-dead-letter-exchange": "",
                                          "x-dead-letter-routing-key": work})  # fmt: skip
    park = top.queue("orders.dlq")
    params = pika.URLParameters(rabbit.url)
    params.client_properties = {"connection_name": "orders-service"}
    conn = pika.BlockingConnection(params)
    conn.channel().basic_consume(work, lambda *a: None, auto_ack=False)
    # The management API lists a consumer some seconds after it subscribed (its statistics
    # interval): the page is loaded once, so wait for the listing first.
    wait_for(lambda: [q for q in listed(work) if q.get("consumers")], 30, "the consumer listed")
    yield {"work": work, "retry": retry, "park": park}
    conn.close()


def test_a_viewer_is_warned_on_the_overview_and_the_topology_page(page, live_server, orders):
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)

    warning = page.locator("#drained-suspects")
    expect(warning).to_contain_text("Drained queues that look like work queues")
    expect(page.locator("tr.drained-suspect", has_text=orders["work"]).first).to_contain_text(
        "1 consumer besides the console's drainer (orders-service)"
    )
    retry_row = page.locator("tr.drained-suspect", has_text=orders["retry"])
    expect(retry_row).to_contain_text("a message TTL (5000 ms, queue argument)")
    for width in (1280, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        warning.scroll_into_view_if_needed()
        screenshot(page, f"overview-drained-{width}")

    page.goto(f"{live_server.url}/topology/")
    section = page.locator("#drained-suspects")
    expect(section.locator("tr.drained-suspect", has_text=orders["retry"])).to_contain_text(
        "a dead-letter exchange (the default exchange, queue argument)"
    )
    expect(section).not_to_contain_text(orders["park"])  # nobody else consumes it: fine
    for width in (1280, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        section.scroll_into_view_if_needed()
        screenshot(page, f"topology-drained-{width}")


def test_an_operator_must_tick_the_override_to_replay_into_a_drained_queue(
    page, live_server, orders
):
    message = make_message(queue=orders["park"], died_in=orders["work"], exchange="",
                           routing_key=orders["work"])  # fmt: skip
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)
    page.goto(f"{live_server.url}/messages/{message.pk}/")
    page.locator("summary", has_text="Replay").first.click()
    form = page.locator("#replay-form")
    override = form.get_by_label("Replay into a queue the console drains anyway")
    expect(form.locator(".allow-drained")).to_contain_text("which the console itself drains")
    expect(form.locator(".allow-drained")).to_contain_text("a loop")

    form.get_by_label("Reason").fill("consumer fixed")
    form.get_by_role("button", name="Replay").click()
    expect(page.locator("#replay-form")).to_contain_text(
        f"the route reaches '{orders['work']}', which the console itself drains"
    )
    message.refresh_from_db()
    assert message.status == Status.PARKED
    page.locator("#replay-form").locator(".allow-drained").wait_for()
    screenshot(page, "message-replay-drained-refused")

    form = page.locator("#replay-form")
    override = form.get_by_label("Replay into a queue the console drains anyway")
    override.check()
    expect(override).to_be_checked()  # the preview it re-renders keeps it ticked
    form.get_by_label("Reason").fill("consumer fixed")
    form.get_by_role("button", name="Replay").click()
    expect(page.get_by_role("status").first).to_contain_text("Replay outcome: confirmed")
    message.refresh_from_db()
    assert message.status == Status.REPLAYED  # orders-service has it now
    entry = AuditEntry.objects.get(action="replay")
    assert f'"allow_drained": ["{orders["work"]}"]' in entry.detail
    page.goto(f"{live_server.url}/audit/")
    expect(page.locator(f"#audit-{entry.pk}")).to_contain_text(
        f"allowed into drained queue {orders['work']}"
    )
