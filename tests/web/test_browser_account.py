"""Alerts you can act on, in headless Chromium at 1,280 px (issue 29): the account page's
Telegram deep link, the Slack one-time link (anonymous -> sign in -> confirm -> linked, and
the same link refused after), unlinking, and Acknowledge pressed on the Sent alerts page."""

import re

import pytest
from playwright.sync_api import expect

from dlq.alerts import links
from dlq.models import AuditEntry, ChatLink, GroupTriage, LinkCode
from tests.browser import log_in, screenshot
from tests.factories import make_user
from tests.sentalerts import acknowledge, failure_group, sent_alert, telegram_bot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"


def test_the_account_page_gives_a_telegram_deep_link(page, live_server):
    telegram_bot("dlq_oncall_bot")
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)

    page.get_by_role("link", name=viewer.username).click()
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()
    expect(page.locator("#my-links")).to_contain_text("No Slack or Telegram user is linked")
    page.get_by_role("button", name="Link Telegram with @dlq_oncall_bot").click()

    link = page.locator(".deep-link a")
    expect(link).to_have_attribute("href", re.compile(r"^https://t\.me/dlq_oncall_bot\?start="))
    expect(page.locator(".deep-link")).to_contain_text("(10 minutes)")
    code = link.get_attribute("href").split("start=", 1)[1]
    assert LinkCode.objects.get().user == viewer
    screenshot(page, "account-telegram-deep-link")

    links.redeem(code, "telegram", chat_user="4242", chat_name="viewer in telegram")  # /start
    page.goto(f"{live_server.url}/account/")
    expect(page.locator("#my-links")).to_contain_text("viewer in telegram")
    expect(page.locator("#my-links")).to_contain_text("4242")


def test_a_slack_one_time_link_signs_in_asks_links_and_works_once(page, live_server):
    operator = make_user("operator", password=PASSWORD)
    code = links.slack_code("U0SLACKANA", "ana <on call>")
    url = f"{live_server.url}/account/link/slack/{code}/"

    page.goto(url)  # from Slack's ephemeral reply, not signed in yet
    page.wait_for_url(re.compile(r"/login/\?next="))
    page.get_by_label("Username").fill(operator.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()

    page.wait_for_url(url)
    expect(page.locator("main")).to_contain_text(
        f"Link Slack user ana <on call> (U0SLACKANA) to your console account {operator.username}?"
    )
    assert not ChatLink.objects.exists()  # asking never links
    screenshot(page, "account-slack-confirm")
    page.get_by_role("button", name="Link", exact=True).click()

    page.wait_for_url(f"{live_server.url}/account/")
    expect(page.locator(".messages")).to_contain_text("now linked to the Slack user ana <on call>")
    expect(page.locator("#my-links")).to_contain_text("U0SLACKANA")
    assert ChatLink.objects.get().user == operator
    assert AuditEntry.objects.filter(action="chat_link", actor_name=operator.username).exists()
    screenshot(page, "account-slack-linked")

    again = page.goto(url)
    assert again.status == 410
    expect(page.locator(".error")).to_contain_text("This link code was used already")
    expect(page.get_by_role("button", name="Link", exact=True)).to_have_count(0)
    screenshot(page, "account-slack-used")


def test_a_user_unlinks_a_chat_user(page, live_server):
    viewer = make_user("viewer", password=PASSWORD)
    links.link(viewer, "slack", "U0GONE", "old slack me")
    log_in(page, live_server, viewer.username, PASSWORD)
    page.goto(f"{live_server.url}/account/")

    page.get_by_role("button", name="Unlink Slack user old slack me").click()

    expect(page.locator(".messages")).to_contain_text("Unlinked the Slack user old slack me.")
    expect(page.locator("#my-links")).to_contain_text("No Slack or Telegram user is linked")
    assert not ChatLink.objects.exists()
    row = AuditEntry.objects.get(action="chat_unlink")
    assert row.actor_name == viewer.username


def test_an_operator_acknowledges_from_the_sent_alerts_page(page, live_server):
    orders, payments = failure_group("orders", 3), failure_group("payments", 2)
    acknowledge(payments, make_user("operator"))
    alert = sent_alert({orders: 3, payments: 2}, channel="team-oncall")
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)

    page.get_by_role("link", name="Alerts", exact=True).click()
    page.get_by_role("link", name="Sent alerts").click()
    row = page.locator(f"#alert-{alert.pk}-{orders}")
    expect(row.locator(".badge")).to_have_text("open")
    expect(page.locator(f"#alert-{alert.pk} caption")).to_contain_text("team-oncall")
    expect(page.locator(f"#alert-{alert.pk}-{payments} .state")).to_contain_text("acknowledged by")
    screenshot(page, "alerts-sent-open")
    row.get_by_role("button", name="Acknowledge").click()

    expect(page.locator(".messages")).to_contain_text("You acknowledged the failure group")
    row = page.locator(f"#alert-{alert.pk}-{orders}")
    expect(row.locator(".badge")).to_have_text("acknowledged")
    expect(row.locator(".state")).to_contain_text(f"by {operator.username} at")
    expect(row.locator(".state time")).to_contain_text("UTC")
    assert GroupTriage.objects.get(group=orders).owner == operator
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    screenshot(page, "alerts-sent-acknowledged")


def test_a_viewer_sees_the_sent_alerts_without_buttons(page, live_server):
    orders = failure_group("orders")
    alert = sent_alert({orders: 1})
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)

    page.goto(f"{live_server.url}/alerts/sent/")

    expect(page.locator(f"#alert-{alert.pk}-{orders} .badge")).to_have_text("open")
    expect(page.locator("main button")).to_have_count(0)
    screenshot(page, "alerts-sent-viewer")
