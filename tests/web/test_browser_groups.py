"""The groups page as a worklist and the group page's form, in headless Chromium at 1,280 and
1,440 px, in a reader's zone that is not UTC (issue 27, point 1): an operator takes a group,
sets its ticket, note and a hold in local time, sees it on hold in the worklist and among
"mine"; a bad ticket URL is refused naming the field; a viewer reads it all, changes none."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from dlq.models import AuditEntry, GroupTriage
from tests.browser import ARTIFACTS, log_in, screenshot
from tests.factories import make_messages, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
ZONE = "Asia/Kolkata"
NAME = "ChargeCard · Payments.CardDeclinedException: card declined by issuer"


def _page(browser, width: int):
    context = browser.new_context(viewport={"width": width, "height": 900}, timezone_id=ZONE)
    context.set_default_timeout(10_000)
    return context.new_page()


def _look(page, name: str) -> None:
    screenshot(page, name)
    page.screenshot(path=str(ARTIFACTS / f"{name}-window.png"))


def _groups():
    fault = {"MT-Fault-ExceptionType": "Payments.CardDeclinedException",
             "MT-Fault-Message": "card declined by issuer\nat Charge.Run()",
             "MT-Fault-MessageType": "ChargeCard"}  # fmt: skip
    card = make_messages(4, queue="payments.dlq", died_in="payments", headers=fault)[0].group
    make_messages(2, queue="emails.dlq", died_in="emails", reason="expired")
    return card


@pytest.mark.parametrize("width", [1280, 1440])
def test_an_operator_takes_a_group_and_puts_it_on_hold(browser, live_server, width):
    group = _groups()
    operator = make_user("operator", password=PASSWORD)
    page = _page(browser, width)
    log_in(page, live_server, operator.username, PASSWORD)

    page.get_by_role("link", name="Groups", exact=True).click()
    row = page.locator(f"#group-{group}")
    expect(row.get_by_role("link", name=NAME)).to_be_visible()
    expect(row.locator(".badge")).to_have_text("new")
    expect(row).to_contain_text("nobody")
    expect(page.locator("table.worklist tbody tr").first).to_have_id(f"group-{group}")  # most
    _look(page, f"groups-worklist-new-{width}")
    row.get_by_role("link", name=NAME).click()

    page.wait_for_url(f"{live_server.url}/groups/{group}/")
    page.get_by_role("button", name="Take it").click()
    expect(page.locator(".messages")).to_contain_text("Saved")
    expect(page.locator("#h-triage .badge")).to_have_text("investigating")
    expect(page.get_by_label("Owner")).to_have_value(operator.username)

    page.get_by_label("Ticket").fill("ftp://tickets.example.com/PAY-7")
    page.get_by_label("Reason").fill("tracking it")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#triage-errors")).to_contain_text("ticket_url")
    expect(page.locator("#triage-errors")).to_contain_text("http or https")

    local_until = datetime.now(ZoneInfo(ZONE)).replace(microsecond=0) + timedelta(hours=3)
    page.get_by_label("Ticket").fill("https://tickets.example.com/PAY-7")
    page.get_by_label("On hold until").fill(local_until.strftime("%Y-%m-%d %H:%M:%S"))
    expect(page.locator("#t-hold-hint .zone-name")).to_contain_text("UTC+05:30")
    page.get_by_label("Note").fill("PSP outage <b>INC-42</b>; replay when they are back")
    page.get_by_label("Reason").fill("waiting for the PSP")
    _look(page, f"groups-form-{width}")
    page.get_by_role("button", name="Save").click()

    expect(page.locator("#h-triage .badge")).to_have_text("on hold")
    triage = GroupTriage.objects.get(group=group)
    assert triage.hold_until == local_until.astimezone(UTC)  # the reader's zone, understood
    assert triage.note == "PSP outage <b>INC-42</b>; replay when they are back"
    assert AuditEntry.objects.filter(action="group_update").count() == 2
    _look(page, f"groups-detail-on-hold-{width}")

    page.get_by_role("link", name="Failure groups").click()
    page.get_by_label("Owner").select_option(label=f"mine ({operator.username})")
    page.get_by_role("button", name="Show").click()
    row = page.locator(f"#group-{group}")
    expect(page.locator("table.worklist tbody tr")).to_have_count(1)
    expect(row.locator(".badge")).to_have_text("on hold")
    expect(row.locator(".note")).to_have_text("PSP outage <b>INC-42</b>; replay when they are back")
    expect(row.get_by_role("link", name="ticket")).to_have_attribute(
        "href", "https://tickets.example.com/PAY-7"
    )
    expect(row.locator(".hold time")).to_contain_text("UTC+05:30")
    _look(page, f"groups-worklist-mine-{width}")
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0

    page.get_by_role("link", name="Audit").click()
    expect(page.locator("main")).to_contain_text(f"made {operator.username} the owner of")
    expect(page.locator("main")).to_contain_text(
        "changed the note, the ticket and the hold of failure group"
    )


def test_a_viewer_reads_who_is_on_a_group_and_changes_nothing(browser, live_server):
    group = _groups()
    GroupTriage.objects.create(group=group, owner=make_user("operator"), note="on it",
                               ticket_url="https://tickets.example.com/PAY-8")  # fmt: skip
    viewer = make_user("viewer", password=PASSWORD)
    page = _page(browser, 1280)
    log_in(page, live_server, viewer.username, PASSWORD)

    page.goto(f"{live_server.url}/groups/{group}/")

    facts = page.locator(".triage-facts")
    expect(facts).to_contain_text("on it")
    expect(facts.get_by_role("link", name="https://tickets.example.com/PAY-8")).to_be_visible()
    expect(page.locator("#triage-form")).to_have_count(0)
    expect(page.get_by_role("button", name="Take it")).to_have_count(0)
    _look(page, "groups-detail-viewer")
