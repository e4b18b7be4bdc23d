"""A group keeps its name everywhere, and the audit reads as sentences (issue 26, points 4
and 7), in a real browser at 1,280 px against a live server and a real Celery worker: an
operator opens a group from the groups page and sees its header (name, counts, the actions),
replays it through the bulk review that says the selection in words, and reads the job's
rows in the audit log as sentences."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser import log_in, screenshot
from tests.factories import make_messages, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
WAIT = 60_000  # ms: a loaded machine runs a worker, a browser and the server
NAME = "CapturePayment · CardDeclined: card declined"


def test_a_group_keeps_its_name_from_the_groups_page_to_the_audit(page, live_server, top, worker):
    work = top.queue("work")
    parked = make_messages(6, queue=top.name("dlq"), died_in=work, exchange="", routing_key=work,
                           type="CapturePayment",
                           headers={"MT-Fault-ExceptionType": "CardDeclined",
                                    "MT-Fault-Message": "card declined\nat Pay:3"})  # fmt: skip
    group = parked[0].group
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)

    page.get_by_role("link", name="Groups", exact=True).click()
    page.locator(f"#group-{group}").get_by_role("link", name=NAME).click()
    page.wait_for_url(f"{live_server.url}/groups/{group}/")
    expect(page.get_by_role("heading", level=1)).to_have_text(NAME)
    header = page.locator("header.group-header")
    expect(header.locator(".group-counts")).to_contain_text("parked 6")
    expect(header).to_contain_text("First seen")
    expect(header.locator("time").first).to_contain_text(re.compile(r"UTC"))
    expect(header).to_contain_text(top.name("dlq"))
    expect(header.get_by_role("link", name="Discard 6 parked…")).to_be_visible()
    screenshot(page, "words-group")
    header.get_by_role("link", name="Replay 6 parked…").click()

    page.wait_for_url(re.compile(r"/bulk/review/\?"))
    expect(page.locator(".selection-words")).to_contain_text(f"Replay 6 parked messages of {NAME}")
    expect(page.get_by_text(f"group = {group}")).to_be_hidden()  # folded: the raw filter
    page.get_by_label("The queue where it failed").check()
    page.get_by_label("Rate limit (messages per second)").fill("20")
    page.get_by_label("has a consumer").uncheck()  # the queues have none here
    page.get_by_label("Reason").fill("card provider back")
    screenshot(page, "words-bulk-review")
    page.get_by_role("button", name="Replay 6 messages").click()

    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    expect(page.locator(".selection-words")).to_contain_text(f"6 parked messages of {NAME}")
    expect(page.locator("#job-status .badge")).to_have_text("done", timeout=WAIT)
    screenshot(page, "words-job")

    page.get_by_role("link", name="This job in the audit log").click()
    sentences = page.locator("table.audit td.sentence")
    expect(sentences.first).to_contain_text(
        f"job {job_id} (replay) finished, done: 6 replayed of 6 messages"
    )
    expect(sentences.nth(1)).to_contain_text(f"started replaying 6 parked messages of {NAME}")
    expect(sentences.nth(1)).to_contain_text(f"to the failed queue at 20/s: job {job_id}")
    expect(page.locator("#f-action option", has_text="A bulk job finishes")).to_have_count(1)
    screenshot(page, "words-audit")
