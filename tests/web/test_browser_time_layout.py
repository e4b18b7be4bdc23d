"""Times and widths as an on-call engineer meets them, in a real browser (Debian's headless
Chromium) set to a time zone that is not UTC: every time says its zone and matches the
stored UTC value, a time typed into a filter as the page shows it selects the right rows,
and the message list and the groups page fit a 1,280 and a 1,440 px window with long type
names and many rows (no horizontal scroll, times on one line, names broken at dots)."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from playwright.sync_api import expect

from dlq import audit
from dlq.drain import store
from dlq.models import AuditAction, Mute
from tests.browser import ARTIFACTS, log_in, screenshot
from tests.factories import make_messages, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
EARLY = datetime(2025, 3, 10, 6, 30, tzinfo=UTC)
LATE = datetime(2025, 3, 10, 7, 45, 30, tzinfo=UTC)
# As the page must show them: New York is on daylight time (UTC-4) since 9 March 2025.
SHOWN = {
    "Asia/Kolkata": ("2025-03-10 12:00:00 UTC+05:30", "2025-03-10 13:15:30 UTC+05:30"),
    "America/New_York": ("2025-03-10 02:30:00 UTC-04:00", "2025-03-10 03:45:30 UTC-04:00"),
}
EXCEPTION = "Contoso.Ordering.Infrastructure.Persistence.OptimisticConcurrencyViolationException"
MESSAGE_TYPE = "urn:message:Contoso.Ordering.Contracts.Commands:SubmitOrderWithLoyaltyPoints"
ALIASES = {"Asia/Kolkata": r"Asia/(Kolkata|Calcutta)", "America/New_York": "America/New_York"}
ZONED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC([+-]\d\d:\d\d)?$")


def zone_page(browser, zone: str, width: int = 1280):
    context = browser.new_context(viewport={"width": width, "height": 900}, timezone_id=zone)
    context.set_default_timeout(10_000)
    return context.new_page()


def look(page, name: str) -> None:
    """The whole page, and what a window of it shows first (a long page shrinks unreadably)."""
    screenshot(page, name)
    page.screenshot(path=str(ARTIFACTS / f"{name}-window.png"))


def operator_in(page, live_server):
    user = make_user("operator", password=PASSWORD)
    log_in(page, live_server, user.username, PASSWORD)
    return user


def times(page) -> list[str]:
    return page.locator("main time").all_inner_texts()


def ids(page) -> set[str]:
    return set(page.locator("table.msg-table tbody td.num a").all_inner_texts())


@pytest.mark.parametrize("zone", ["Asia/Kolkata", "America/New_York"])
def test_times_say_their_zone_and_a_filter_takes_them_as_shown(browser, live_server, zone):
    [early] = make_messages(1, queue="orders.dlq", received_at=EARLY)
    [late] = make_messages(1, queue="orders.dlq", received_at=LATE)
    page = zone_page(browser, zone)
    operator_in(page, live_server)

    page.goto(f"{live_server.url}/messages/")
    page.locator("table.msg-table").wait_for()
    assert times(page) == [SHOWN[zone][1], SHOWN[zone][0]]  # newest first
    when = page.locator("table.msg-table time").last
    assert when.get_attribute("datetime") == "2025-03-10T06:30:00+00:00"
    assert "2025-03-10 06:30:00 UTC" in when.get_attribute("title")
    # The filter says what it takes (Chromium names Asia/Kolkata by its old name, Calcutta).
    assert re.search(ALIASES[zone], page.locator("#iso-hint").inner_text())
    look(page, f"time-messages-{zone.replace('/', '-')}")

    # Copied from the page into the filter, as the engineer would.
    page.get_by_label("Received after").fill(when.inner_text())
    page.get_by_label("Received before").fill(SHOWN[zone][1])
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile("received_before="))
    expect(page.locator("table.msg-table tbody tr")).to_have_count(1)
    assert ids(page) == {str(early.pk)}
    # A time without a zone is in the zone the hint names: the browser's.
    page.get_by_label("Received before").fill("")
    page.get_by_label("Received after").fill(SHOWN[zone][1].rsplit(" ", 1)[0])
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile("received_before=&"))
    expect(page.locator("table.msg-table tbody tr")).to_have_count(1)
    assert ids(page) == {str(late.pk)}

    page.goto(f"{live_server.url}/messages/{early.pk}/")
    assert SHOWN[zone][0] in times(page)
    assert all(ZONED.match(text) for text in times(page)), times(page)


def test_the_audit_filter_takes_the_times_it_shows(browser, live_server):
    page = zone_page(browser, "Asia/Kolkata")
    operator_in(page, live_server)
    first = audit.record("oper", AuditAction.DISCARD, reason="first")
    second = audit.record("oper", AuditAction.DISCARD, reason="second")
    shown = {}
    page.goto(f"{live_server.url}/audit/")
    for entry in (first, second):
        text = page.locator(f"#audit-{entry.pk} time").inner_text()
        assert text.endswith(" UTC+05:30")
        shown[entry.pk] = text
    assert re.search(ALIASES["Asia/Kolkata"], page.locator("form.audit-filters").inner_text())

    page.get_by_label("After").fill(shown[second.pk])
    page.get_by_role("button", name="Filter").click()
    page.locator("table.audit").wait_for()
    rows = page.locator("table.audit tbody tr[id]")
    # Shown to the second: the first row is at most a second earlier, so either may match,
    # but never a row before the time typed.
    assert f"audit-{second.pk}" in rows.evaluate_all("rs => rs.map(r => r.id)")
    assert page.get_by_label("After").input_value() == shown[second.pk]
    look(page, "time-audit")


def test_a_mute_is_typed_in_the_browsers_zone_and_shown_in_it(browser, live_server):
    page = zone_page(browser, "Asia/Kolkata")
    operator_in(page, live_server)
    page.goto(f"{live_server.url}/alerts/rules/")
    form = page.locator("form[action$='/alerts/mutes/add/']")
    assert re.search(ALIASES["Asia/Kolkata"], form.locator(".zone-name").inner_text())
    day = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    form.get_by_label("Queue").fill("orders.dlq")
    form.get_by_label("Until").fill(f"{day}T10:00")
    form.get_by_label("Reason").fill("deploy")
    form.get_by_role("button", name="Mute").click()
    page.get_by_text("Mute added.").wait_for()
    assert Mute.objects.get().until == datetime.fromisoformat(f"{day}T04:30:00+00:00")
    assert f"{day} 10:00:00 UTC+05:30" in page.locator("main").inner_text()
    look(page, "time-mute")


def test_no_time_column_claims_utc_over_local_times(browser, live_server):
    page = zone_page(browser, "America/New_York")
    admin = make_user("admin", password=PASSWORD)
    log_in(page, live_server, admin.username, PASSWORD)
    for path in ("/alerts/attempts/", "/alerts/rules/", "/audit/", "/messages/", "/groups/"):
        page.goto(f"{live_server.url}{path}")
        headers = page.locator("th").all_inner_texts()
        assert not [h for h in headers if "UTC" in h], (path, headers)


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


WRAPPED_TIMES = """() => [...document.querySelectorAll("main time")].filter(el => {
    const line = parseFloat(getComputedStyle(el).lineHeight);
    return el.getBoundingClientRect().height > line * 1.5;
}).map(el => el.textContent)"""

# Each line of a name as laid out: every line but the last ends where a name may wrap
# (after . : $ + / -) or at a space (a group name is prose around type names).
LINES = """el => {
    const lines = [];
    let top = null;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.length; i++) {
            const range = document.createRange();
            range.setStart(node, i); range.setEnd(node, i + 1);
            const rect = range.getBoundingClientRect();
            if (!rect.height) continue;
            if (top === null || rect.top > top + 2) { lines.push(""); top = rect.top; }
            lines[lines.length - 1] += node.data[i];
        }
    }
    return lines;
}"""

WRAPPED_BUTTONS = """() => [...document.querySelectorAll("main .actions :is(.button, button)")]
    .filter(el => {
        const line = parseFloat(getComputedStyle(el).lineHeight);
        return el.getBoundingClientRect().height > line * 1.5 + 12;  // + its padding
    }).map(el => el.textContent)"""


def broken_mid_word(page, selector: str) -> list[list[str]]:
    cells = page.locator(selector).evaluate_all(f"cells => cells.map({LINES})")
    wraps = re.compile(r"[.:$+/\s-]$")
    return [lines for lines in cells if any(not wraps.search(line) for line in lines[:-1])]


@pytest.mark.parametrize("width", [1280, 1440])
def test_the_list_and_groups_fit_the_window(browser, live_server, width):
    # A console that has stored millions: ids of eight digits (CI's shared test database
    # reaches six, which a layout with no slack did not fit).
    with connection.cursor() as cursor:
        cursor.execute("SELECT setval(pg_get_serial_sequence('dlq_message', 'id'), 99999000)")
    for n in range(4):  # four groups, each with a long exception and message type
        fault = {"MT-Fault-ExceptionType": f"{EXCEPTION}{n}",
                 "MT-Fault-MessageType": f"{MESSAGE_TYPE}{n}",
                 "MT-Fault-Message": "Row was updated by another transaction " * 4}  # fmt: skip
        make_messages(15, queue="orders.payments.dead-letter", died_in=f"orders.payments.{n}",
                      exchange="contoso.ordering.commands.exchange",
                      routing_key="contoso.ordering.commands.submit-order.priority",
                      headers=fault)  # fmt: skip
    # A drained queue in a second vhost: the list gains its vhost column, as on an estate.
    store.note_queues("billing", [{"name": "orders.payments.dead-letter", "type": "quorum"}])
    page = zone_page(browser, "Asia/Kolkata", width)
    operator_in(page, live_server)

    page.goto(f"{live_server.url}/messages/")
    expect(page.locator("table.msg-table th", has_text="Vhost")).to_have_count(1)
    page.locator("table.msg-table").wait_for()
    look(page, f"layout-messages-{width}")
    assert overflow(page) <= 0
    assert page.evaluate(WRAPPED_TIMES) == []
    assert broken_mid_word(page, "table.msg-table td.type-name .name") == []
    assert page.evaluate(WRAPPED_BUTTONS) == []

    page.goto(f"{live_server.url}/groups/")
    page.locator("table.groups").wait_for()
    look(page, f"layout-groups-{width}")
    assert overflow(page) <= 0
    assert page.evaluate(WRAPPED_TIMES) == []
    assert page.evaluate(WRAPPED_BUTTONS) == []
    assert broken_mid_word(page, "table.groups .type-name") == []
