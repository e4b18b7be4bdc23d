"""The topology health page in a real browser: warnings grouped by check with a count and
why they matter; an admin acknowledges one with a reason and sees it move to the
acknowledged part; a viewer sees that part but no button."""

import pytest

from dlq.models import AuditEntry
from tests.browser import log_in, screenshot
from tests.factories import make_user
from tests.topology import Topology

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "a-long-browser-password"
WIDTHS = (1280, 1440)


@pytest.fixture
def warned(settings, channel, cleanup_queues, unique):
    """Two work queues without a dead-letter exchange, a quorum queue that drops after its
    delivery limit, and a parking queue (left out); only this test's queues count as work
    queues, so what other tests leave on the broker stays off the picture."""
    settings.DLQ_WORK_QUEUES = [f"{unique}.*"]
    top = Topology(channel, cleanup_queues, unique)
    top.queue("orders.dlq")
    return {
        "bare": top.queue("orders"),
        "other": top.queue("emails"),
        "limited": top.queue("invoices", durable=True,
                             **{"x-queue-type": "quorum", "x-delivery-limit": 5}),
    }  # fmt: skip


def _fits(page, width: int, name: str) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(page, f"{name}-{width}")


def test_an_admin_acknowledges_a_warning(page, live_server, warned):
    admin = make_user("admin", password=PASSWORD)
    log_in(page, live_server, admin.username, PASSWORD)
    page.goto(f"{live_server.url}/topology/")
    no_dlx = page.locator("section.check-no_dlx")
    assert no_dlx.locator("h3").inner_text() == "No dead-letter exchange 2"
    assert "give the queue a dead-letter exchange" in no_dlx.locator("p.why").inner_text()
    limited = page.locator("section.check-delivery_limit tr", has_text=warned["limited"])
    assert "delivery limit of 5" in limited.inner_text()
    assert "parking queues with no dead-letter exchange" in page.locator("p.left-out").inner_text()
    for width in WIDTHS:
        _fits(page, width, "topology-admin")

    row = no_dlx.locator("tr", has_text=warned["bare"])
    row.get_by_text("Acknowledge", exact=True).first.click()  # the <summary>
    row.get_by_label("Reason").fill("the billing team owns it and replays by hand")
    screenshot(page, "topology-acknowledging")
    row.get_by_role("button", name="Acknowledge").click()
    page.wait_for_url(f"{live_server.url}/topology/")
    assert page.locator("section.check-no_dlx h3").inner_text() == "No dead-letter exchange 1"
    part = page.locator("details.acknowledged")
    assert part.locator("> summary").inner_text() == "Acknowledged (1)"
    part.locator("> summary").click()
    acked = part.locator("tr", has_text=warned["bare"])
    assert f"by {admin.username}" in acked.inner_text()
    assert "the billing team owns it" in acked.inner_text()
    assert AuditEntry.objects.filter(action="topology_ack", actor_name=admin.username).exists()
    for width in WIDTHS:
        _fits(page, width, "topology-acknowledged")
    page.set_viewport_size({"width": 1280, "height": 900})
    screenshot(page, "topology-health")

    acked.get_by_text("Withdraw", exact=True).first.click()
    acked.get_by_label("Reason").fill("billing moved to a DLX policy")
    acked.get_by_role("button", name="Withdraw").click()
    page.wait_for_url(f"{live_server.url}/topology/")
    assert page.locator("section.check-no_dlx h3").inner_text() == "No dead-letter exchange 2"
    assert page.locator("details.acknowledged").count() == 0


def test_a_viewer_sees_acknowledgements_without_buttons(page, live_server, warned):
    from dlq.health import acknowledgements

    acknowledgements.acknowledge("oncall-lead", "/", warned["bare"], "no_dlx", "known")
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)
    page.goto(f"{live_server.url}/topology/")
    assert page.locator("section.check-no_dlx h3").inner_text() == "No dead-letter exchange 1"
    assert page.locator("section.check-no_dlx tr", has_text=warned["other"]).count() == 1
    page.locator("details.acknowledged > summary").click()
    acked = page.locator("details.acknowledged tr", has_text=warned["bare"])
    assert "by oncall-lead" in acked.inner_text() and "known" in acked.inner_text()
    assert page.get_by_role("button", name="Acknowledge").count() == 0
    assert page.get_by_role("button", name="Withdraw").count() == 0
    for width in WIDTHS:
        _fits(page, width, "topology-viewer")
