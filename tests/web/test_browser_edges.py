"""The edges of the console in a real browser (Debian's headless Chromium): the 404 page of
a purged message with the navigation and the request id, a favicon and no 404 in the
console on a first load, /drainers/ opened directly, the overview saying nobody is paged, and
an admin making a user and an API token that is shown once."""

import pytest
from django.utils import timezone
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from dlq.accounts.roles import role_of
from dlq.alerts import channels
from dlq.models import AlertAttempt, ApiToken, AuditEntry
from tests.browser import log_in, screenshot
from tests.factories import make_messages, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"


def watch(page) -> list[str]:
    """What the browser complains about: failed responses and console errors."""
    problems = []
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status} {r.url}"))
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(m.text))
    return problems


def test_a_first_load_has_a_favicon_and_no_404(page, live_server):
    problems = watch(page)
    page.goto(f"{live_server.url}/login/")
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert page.request.get(f"{live_server.url}{icon}").status == 200
    fallback = page.request.get(f"{live_server.url}/favicon.ico")
    assert fallback.status == 200 and b"<svg" in fallback.body()
    assert problems == []


def test_a_purged_messages_link_is_no_dead_end(page, live_server):
    viewer = make_user("viewer", password=PASSWORD)
    [message] = make_messages(1)
    gone = message.pk
    message.delete()
    log_in(page, live_server, viewer.username, PASSWORD)

    response = page.goto(f"{live_server.url}/messages/{gone}/")
    assert response.status == 404
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text(f"Message {gone} no longer exists")
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    expect(page.locator(".request-id code")).to_have_text(response.headers["x-request-id"])
    screenshot(page, "edges-404-message")
    page.get_by_role("link", name=f"What the audit log kept of message {gone}").click()
    expect(page).to_have_url(f"{live_server.url}/audit/?message={gone}")


def test_drainers_opened_directly_is_a_whole_page(page, live_server):
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)
    page.goto(f"{live_server.url}/drainers/")
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    expect(page.get_by_role("heading", name="Drainers", level=1)).to_be_visible()
    expect(page.locator("link[rel=stylesheet]")).to_have_count(1)
    screenshot(page, "edges-drainers")


def test_the_overview_says_nobody_is_paged(page, live_server):
    admin = make_user("admin", password=PASSWORD)
    log_in(page, live_server, admin.username, PASSWORD)
    warning = page.get_by_role("alert").filter(has_text="Nobody is paged")
    expect(warning).to_contain_text("no alert channel is set up")
    screenshot(page, "edges-overview-nobody-paged")
    warning.get_by_role("link", name="Add a channel").click()
    expect(page).to_have_url(f"{live_server.url}/alerts/")


def test_a_failing_channel_is_named_on_the_overview_and_not_green(page, live_server):
    hook = channels.create_channel("webhook", "ops-hook", url="https://hooks.example/x")
    now = timezone.now()
    AlertAttempt.objects.create(channel=hook, channel_name=hook.name, kind="digest",
                                status="failed", error="HTTP 503: <b>upstream down</b>",
                                http_status=503, not_before=now, created_at=now,
                                finished_at=now)  # fmt: skip
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)
    warning = page.get_by_role("alert").filter(has_text="are failing")
    expect(warning).to_contain_text("Alerts to ops-hook are failing")
    expect(warning).to_contain_text("HTTP 503: <b>upstream down</b>")  # as text, not markup
    screenshot(page, "edges-overview-failing")
    warning.get_by_role("link", name="Delivery attempts").click()
    page.get_by_role("link", name="Channels").click()
    row = page.locator(f"#channel-{hook.pk}")
    expect(row).to_contain_text("enabled, failing")
    expect(row).to_contain_text("Failed")
    screenshot(page, "edges-alert-channels")


def test_an_admin_makes_a_user_and_a_token_shown_once(page, live_server):
    admin = make_user("admin", password=PASSWORD)
    log_in(page, live_server, admin.username, PASSWORD)
    page.get_by_role("link", name="Users", exact=True).click()
    screenshot(page, "edges-users")
    page.get_by_role("link", name="Add a user").click()
    page.get_by_label("Username").fill("ci-bot")
    page.get_by_label("Role").select_option("operator")
    page.get_by_label("No password").check()
    screenshot(page, "edges-user-add")
    page.get_by_role("button", name="Add user").click()
    expect(page.get_by_role("status")).to_contain_text("User ci-bot added as operator.")
    row = page.locator("tr", has_text="ci-bot")
    expect(row).to_contain_text("no password (API tokens only)")

    page.get_by_role("link", name="Make an API token").click()
    page.get_by_label("For user").select_option(label="ci-bot")
    page.get_by_label("Name").fill("nightly replays")
    screenshot(page, "edges-token-add")
    page.get_by_role("button", name="Make token").click()
    token = page.get_by_label("Token").input_value()
    assert token.startswith("dlq_")
    screenshot(page, "edges-token-made")
    api = page.request.get(f"{live_server.url}/api/v1/queues",
                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert api.status == 200

    page.get_by_role("link", name="Back to the tokens").click()
    expect(page.locator("table.tokens")).to_contain_text("nightly replays")
    assert token not in page.content()
    screenshot(page, "edges-tokens")
    with pytest.raises(PlaywrightError, match="ERR_CACHE_MISS"):
        page.go_back()  # no-store: the browser would have to post again, it shows nothing

    stored = ApiToken.objects.get()
    assert stored.user.username == "ci-bot" and role_of(stored.user) == "operator"
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"user_create", "token_create"} <= actions
