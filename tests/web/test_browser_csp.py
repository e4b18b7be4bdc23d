"""Every main page in a real browser under the Content-Security-Policy, with an XSS payload
wherever message-derived text appears (body, headers, queue names, exception text, audit
reasons and diffs, a job's failed items, group samples, the chart's labels): no policy
violation is reported, no payload runs or becomes an element, every form control has a label,
htmx still works, and times show in the reader's zone (converted once, UTC on hover)."""

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from dlq.actions import message as message_actions
from dlq.jobs import control, running
from tests.browser import log_in, screenshot
from tests.factories import make_messages, make_user
from tests.rabbits import only_on

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
XSS = "<script>alert(1)</script><img src=x onerror=alert(1)>"
# Runs before any page script; Playwright injects it outside the page's policy.
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI);
});
"""

UNLABELLED = """Array.from(document.querySelectorAll(
  "input:not([type=hidden]):not([type=submit]):not([type=button]), select, textarea"))
  .filter(el => !el.labels.length && !el.getAttribute("aria-label")
                && !el.getAttribute("aria-labelledby"))
  .map(el => el.outerHTML.slice(0, 160))"""


@pytest.fixture
def tokyo(browser):
    """A reader in Tokyo (UTC+9 all year) with a watch on policy violations and dialogs."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, timezone_id="Asia/Tokyo")
    context.set_default_timeout(15_000)
    context.add_init_script(WATCH)
    page = context.new_page()
    page.problems = []
    page.on("dialog", lambda d: (page.problems.append(f"dialog {d.message}"), d.dismiss()))
    page.on(
        "console", lambda m: "Content Security Policy" in m.text and page.problems.append(m.text)
    )
    yield page
    context.close()


def tokyo_hour(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(ZoneInfo("Asia/Tokyo")).strftime("%H:%M")


def hostile_data(unique) -> dict:
    """Payloads in every place a page shows text that came from a message or an operator."""
    queue = f"{unique}{XSS}.dlq"
    exception = {"x-exception-message": XSS, "x-exception-stacktrace": f"java.lang.X: {XSS}"}
    messages = make_messages(3, queue=queue, died_in=f"{unique}{XSS}", body=XSS.encode(),
                             headers={XSS: XSS, **exception}, correlation_id=XSS[:60])  # fmt: skip
    operator = make_user("operator", password=PASSWORD)
    headers = {**messages[0].headers, "note": {"type": "longstr", "value": XSS}}
    message_actions.edit(
        messages[0].pk, operator, XSS, body_text=f'{{"x": "{XSS}"}}', headers=headers
    )
    job = control.create_job(operator, "replay", ids=[messages[1].pk], reason=XSS,
                          target={"exchange": f"{unique}{XSS}", "routing_key": XSS})  # fmt: skip
    running.run_job(job.pk)  # the broker refuses the unknown exchange: its words name it
    return {"operator": operator, "messages": messages, "job": job, "queue": queue}


def clean(page) -> None:
    """Nothing ran, nothing was blocked, and no payload became an element."""
    assert page.evaluate("window.__violations") == [], page.url
    assert page.problems == [], page.url
    assert page.locator("img[src=x]").count() == 0, page.url
    assert page.locator("script:not([src])").count() == 0, page.url
    assert page.evaluate(UNLABELLED) == [], page.url


def visit(page, url: str, shot: str | None = None) -> None:
    page.goto(url)
    page.wait_for_load_state("load")
    clean(page)
    if shot:
        screenshot(page, shot)


@only_on(
    "rabbitmq-3.10",
    why="it tests the pages under the content security policy; the failed job it shows is"
    " broker work that tests/actions/test_jobs_*.py run on both brokers",
)
def test_every_page_runs_under_the_policy_and_shows_payloads_as_text(
    rabbit, tokyo, live_server, unique
):
    page, data = tokyo, hostile_data(unique)
    first, failed = data["messages"][0], data["messages"][1]
    visit(page, f"{live_server.url}/login/")
    log_in(page, live_server, data["operator"].username, PASSWORD)
    clean(page)
    expect(page.locator("figure .legend")).to_contain_text(XSS)  # the chart's label
    ticks = page.eval_on_selector_all(
        "svg.chart text[data-at]", "els => els.map(e => [e.getAttribute('data-at'), e.textContent])"
    )
    assert len(ticks) == 6 and all(label == tokyo_hour(at) for at, label in ticks), ticks
    expect(page.locator("table.groups")).to_contain_text(XSS)  # top groups' sample
    expect(page.locator("main")).to_contain_text(f"{unique}{XSS}.dlq")  # the queue's name
    screenshot(page, "csp-overview")

    visit(page, f"{live_server.url}/messages/")
    page.evaluate("window.stillTheSamePage = true")
    page.get_by_label("Search body and headers").fill("onerror")
    page.wait_for_url(re.compile(r"q=onerror"))  # htmx pushed the URL: it runs under the policy
    expect(page.locator("table.msg-table caption")).to_contain_text("containing “onerror”")
    assert page.locator("table.msg-table tbody tr").count() == 3
    expect(page.locator("#results-announce")).to_have_text("3 messages shown.")  # live region
    page.get_by_role("button", name="count them").click()
    expect(page.locator("#match-count")).to_have_text("3 messages match")
    assert page.evaluate("window.stillTheSamePage") is True
    expect(page.locator("table.msg-table")).to_contain_text(XSS)
    clean(page)
    screenshot(page, "csp-messages")

    visit(page, f"{live_server.url}/messages/{first.pk}/", "csp-message-detail")
    assert XSS in page.locator("#body").inner_text()
    expect(page.locator("main")).to_contain_text(f"java.lang.X: {XSS}")
    page.locator("summary", has_text="Replay").click()
    expect(page.locator("#route-preview")).to_contain_text("Route:")  # loaded by htmx
    clean(page)

    visit(page, f"{live_server.url}/groups/", "csp-groups")
    expect(page.locator("table.groups")).to_contain_text(XSS)
    visit(page, f"{live_server.url}/audit/?action=edit", "csp-audit")  # not the sign-ins
    expect(page.locator("table.audit")).to_contain_text(f'"x": "{XSS}"')
    expect(page.locator("table.audit pre.diff").first).to_contain_text(XSS)
    clean(page)

    job = data["job"]
    visit(page, f"{live_server.url}/jobs/{job.pk}/", "csp-job-failed")
    expect(page.locator("#progress")).to_contain_text(f"{unique}{XSS}")  # the broker's detail
    assert page.locator("#progress a", has_text=f"message {failed.pk}").count() == 1
    visit(page, f"{live_server.url}/jobs/")
    queue = data["queue"]
    visit(page, f"{live_server.url}/bulk/review/?action=replay&all=1&queue={queue}")
    expect(page.locator("ul.selection")).to_contain_text(queue)
    for url in ("/alerts/", "/alerts/attempts/", "/alerts/rules/"):
        visit(page, f"{live_server.url}{url}")

    page.keyboard.press("Tab")  # the first stop is the skip link, and focus shows
    assert page.evaluate("document.activeElement.className") == "skip"
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/login/")
    clean(page)


def test_times_show_in_the_readers_zone_once_with_utc_on_hover(tokyo, live_server):
    at = datetime(2025, 5, 1, 12, 30, 5, tzinfo=UTC)
    message = make_messages(1, queue="times.dlq", received_at=at)[0]
    viewer = make_user("viewer", password=PASSWORD)
    log_in(tokyo, live_server, viewer.username, PASSWORD)

    def check(time) -> None:
        expect(time).to_have_text("2025-05-01 21:30:05 UTC+09:00")  # the zone said, once
        expect(time).to_have_attribute("title", "2025-05-01 12:30:05 UTC · shown in Asia/Tokyo")

    visit(tokyo, f"{live_server.url}/messages/")
    check(tokyo.locator("table.msg-table time").first)
    tokyo.get_by_label("Queue").fill("times.dlq")
    tokyo.get_by_role("button", name="Filter").click()
    tokyo.wait_for_url(re.compile(r"queue=times.dlq"))
    check(tokyo.locator("table.msg-table time").first)  # swapped in by htmx, converted once
    visit(tokyo, f"{live_server.url}/messages/{message.pk}/")
    check(tokyo.locator("dl.summary time").first)
