"""The redrive policies page in a real browser (headless Chromium): an admin types a policy,
previews what it would match now, adds it, and the table says what it holds."""

from datetime import UTC, datetime, timedelta

import pytest

from dlq.models.redrive import RedrivePolicy
from dlq.redrive import policies, scheduler
from tests.browser import log_in, screenshot
from tests.factories import make_messages, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "a-long-browser-password"


def test_an_admin_previews_and_adds_a_policy(page, live_server):
    make_messages(4, queue="payments.dlq")
    admin = make_user("admin", password=PASSWORD)
    log_in(page, live_server, admin.username, PASSWORD)
    page.goto(f"{live_server.url}/policies/")
    page.get_by_text("Add a redrive policy").click()
    page.get_by_label("Name").fill("psp-timeouts")
    page.get_by_label("Match queue").fill("payments.dlq")
    page.get_by_label("Max attempts").fill("3")
    page.get_by_role("button", name="Preview").last.click()

    page.get_by_role("status").filter(has_text="would match 4 parked messages").wait_for()
    assert not RedrivePolicy.objects.exists()
    for width in (1280, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        screenshot(page, f"policies-preview-{width}")
    page.get_by_role("button", name="Add", exact=True).click()

    page.get_by_text("Redrive policy psp-timeouts saved.").wait_for()
    row = page.locator("table.policies tbody tr").first
    assert "4 parked, 4 waiting, 0 exhausted" in row.inner_text()
    assert "active" in row.inner_text()
    for width in (1280, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        screenshot(page, f"policies-list-{width}")


def test_a_policy_held_back_says_why_in_its_row(page, live_server, top):
    nowhere = top.exchange("nowhere", "direct")  # nothing bound: the gate holds it back
    make_messages(2, queue=top.name("dlq"), exchange=nowhere, routing_key="k")
    policy = policies.save("admin", {"name": "psp-timeouts", "match": {"queue": top.name("dlq")},
                                     "target": "original", "delay_seconds": 1, "backoff": 2,
                                     "max_attempts": 3}, "flaky psp")  # fmt: skip
    scheduler.run_policy(policy, datetime.now(UTC) + timedelta(seconds=30))
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)
    page.goto(f"{live_server.url}/policies/")

    waiting = page.locator(f"#policy-{policy.pk} .policy-waiting")
    assert "routes 'k' to no queue: nothing would receive the replay" in waiting.inner_text()
    assert waiting.inner_text().startswith("waiting since ")
    screenshot(page, "policies-waiting")
