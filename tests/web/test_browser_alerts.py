"""Alert channels in a real browser (Debian's headless Chromium) against a live server:
an admin adds a webhook and sends a test alert; a viewer sees no secret and no button,
and a forged POST is refused."""

import pytest

from dlq.alerts import channels
from dlq.models import AlertChannel
from tests.browser import forged_post, log_in, screenshot
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
HOOK_SECRET = "hook-SECRET-abcdef123456"


def test_an_admin_adds_a_webhook_and_sends_a_test_alert(page, live_server, endpoint):
    admin = make_user("admin", password=PASSWORD)
    log_in(page, live_server, admin.username, PASSWORD)
    screenshot(page, "overview")

    page.get_by_role("link", name="Alerts", exact=True).click()
    page.get_by_role("link", name="Webhook").click()
    page.get_by_label("Name").fill("ops-hook")
    page.get_by_label("Webhook URL").fill(f"{endpoint.url}/webhook/{HOOK_SECRET}")
    screenshot(page, "alerts-channel-add")
    page.get_by_role("button", name="Save").click()

    row = page.locator("tr", has_text="ops-hook")
    assert "…3456" in row.inner_text()
    row.get_by_role("button", name="Send test alert").click()
    page.get_by_text("Test alert sent to ops-hook (HTTP 200).").wait_for()
    screenshot(page, "alerts-channels-admin")
    assert HOOK_SECRET not in page.content()
    [request] = endpoint.wait_for(1)
    assert request.path == f"/webhook/{HOOK_SECRET}" and request.json()["kind"] == "test"

    page.get_by_role("link", name="Delivery attempts").click()
    attempt = page.locator("tbody tr").first
    assert "ops-hook" in attempt.inner_text() and "Sent" in attempt.inner_text()
    screenshot(page, "alerts-attempts")


def test_a_viewer_sees_no_secret_no_button_and_a_forged_post_fails(page, live_server):
    channel = channels.create_channel("webhook", "ops-hook", url=f"https://x.example/{HOOK_SECRET}")
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)

    page.goto(f"{live_server.url}/alerts/")
    screenshot(page, "alerts-channels-viewer")

    assert "https://x.example/…3456" in page.locator("tr", has_text="ops-hook").inner_text()
    assert HOOK_SECRET not in page.content()
    assert page.get_by_role("button", name="Send test alert").count() == 0
    assert page.get_by_role("link", name="Delete").count() == 0
    assert forged_post(page, f"/alerts/channels/{channel.pk}/delete/") == 403
    assert AlertChannel.objects.filter(pk=channel.pk).exists()

    page.get_by_role("link", name="Rules and mutes").click()
    page.get_by_role("heading", name="Alerts").wait_for()
    assert page.get_by_role("link", name="Add a rule").count() == 0
    screenshot(page, "alerts-rules-viewer")
