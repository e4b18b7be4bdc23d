"""The ops pages in a real browser (Debian's headless Chromium) against a live server and a
real Celery worker: an operator bulk-replays a failure group through the review page and
watches the progress bar reach done (the messages arrive in the real queue), does the same
from the Messages list (filter, all matching, more than a page), discards a few checked rows,
cancels a rate-limited job, and a viewer sees no action button while a forged POST is
refused."""

import re

import pytest
from playwright.sync_api import expect

from dlq.models import Message, Status
from dlq.models.actions import Job, JobStatus
from tests.browser import forged_post, log_in, screenshot
from tests.factories import make_messages, make_user
from tests.topology import depth, wait_depth
from tests.uiops import a_job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
WAIT = 60_000  # ms: a loaded two-core machine runs a worker, a browser and the server


def operator_logs_in(page, live_server):
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)


def operator_on_messages(page, live_server):
    operator_logs_in(page, live_server)
    page.get_by_role("link", name="Messages", exact=True).click()
    page.locator("table.msg-table").wait_for()


def wait_for_done(page, total: int) -> None:
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    expect(page.locator("#job-progress")).to_have_attribute("value", str(total), timeout=WAIT)
    expect(page.locator("#job-status .badge")).to_have_text("done")


def test_an_operator_replays_a_group_and_watches_it_finish(page, live_server, top, worker):
    work = top.queue("work")
    parked = make_messages(12, queue=top.name("dlq"), died_in=work, exchange="", routing_key=work)
    make_messages(3, queue=top.name("dlq"), died_in=work, reason="expired")  # another group
    operator_logs_in(page, live_server)
    screenshot(page, "ops-overview")

    page.get_by_role("link", name="Groups", exact=True).click()
    row = page.locator(f"#group-{parked[0].group}")
    expect(row.locator("td.num")).to_have_text("12")
    screenshot(page, "ops-groups")
    row.get_by_role("link", name="Replay group…").click()

    expect(page.locator(".count")).to_contain_text("Replay 12 parked messages of rejected in")
    page.get_by_label("The queue where it failed").check()
    page.get_by_role("button", name="Preview route").click()
    expect(page.locator("td.route").first).to_contain_text(f"→ {work}")
    page.get_by_label("Rate limit (messages per second)").fill("4")
    page.get_by_label("has a consumer").uncheck()  # the queues have none here
    page.get_by_label("Reason").fill("consumer fixed in 2.4.1")
    screenshot(page, "ops-bulk-review")
    page.get_by_role("button", name="Replay 12 messages").click()

    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    expect(page.get_by_role("status").first).to_contain_text("created: replay of 12 messages")
    bar = page.locator("#job-progress")
    expect(bar).to_have_attribute("value", "12", timeout=WAIT)  # polled, never reloaded
    expect(page.locator("#job-status .badge")).to_have_text("done")
    expect(page.locator("#progress")).not_to_have_attribute("hx-get", re.compile("."))
    expect(page.locator("table.outcomes")).to_contain_text("confirmed")
    screenshot(page, "ops-job-done")

    wait_depth(top.ch, work, 12, timeout=30)
    assert depth(top.ch, work) == 12
    assert set(Message.objects.filter(group=parked[0].group).values_list("status", flat=True)) == {
        Status.REPLAYED
    }
    page.get_by_role("link", name="Audit", exact=True).click()
    expect(page.locator("table.audit")).to_contain_text("consumer fixed in 2.4.1")
    screenshot(page, "ops-audit")
    page.get_by_role("link", name="Overview", exact=True).click()
    expect(page.locator("svg.chart")).to_be_visible()
    screenshot(page, "ops-overview-after")


def test_an_operator_cancels_a_rate_limited_job(page, live_server, top, worker):
    work = top.queue("work")
    parked = make_messages(200, queue=top.name("dlq"), died_in=work, exchange="", routing_key=work)
    operator_logs_in(page, live_server)

    ids = "&".join(f"id={m.pk}" for m in parked)
    page.goto(f"{live_server.url}/bulk/review/?action=replay&replay-target=failed_queue&{ids}")
    page.get_by_label("Rate limit (messages per second)").fill("2")
    page.get_by_label("has a consumer").uncheck()  # the queues have none here
    page.get_by_label("Reason").fill("slowly, please")
    page.get_by_role("button", name="Replay 200 messages").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))

    expect(page.locator("#job-status .badge")).to_have_text("running", timeout=WAIT)
    expect(page.locator("#job-progress")).not_to_have_attribute("value", "0", timeout=WAIT)
    screenshot(page, "ops-job-running")
    page.get_by_role("button", name="Cancel job").click()

    expect(page.locator("#job-status .badge")).to_have_text("cancelled", timeout=WAIT)
    screenshot(page, "ops-job-cancelled")
    job = Job.objects.get()
    assert job.status == JobStatus.CANCELLED and 0 < job.done < 200
    assert Message.objects.filter(status=Status.REPLAYED).count() == job.done
    assert Message.objects.filter(status=Status.PARKED).count() == 200 - job.done
    wait_depth(top.ch, work, job.done, timeout=30)
    assert depth(top.ch, work) == job.done


def test_a_viewer_sees_no_action_button_and_a_forged_post_fails(page, live_server):
    messages = make_messages(2, queue="viewer.dlq")
    job = a_job([m.pk for m in messages])
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)

    page.get_by_role("link", name="Groups", exact=True).click()
    expect(page.locator(f"#group-{messages[0].group}")).to_be_visible()
    assert page.get_by_role("link", name="Replay group…").count() == 0
    assert page.get_by_role("link", name="Discard group…").count() == 0
    screenshot(page, "ops-groups-viewer")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    expect(page.locator("#job-status .badge")).to_have_text("pending")
    assert page.get_by_role("button", name="Cancel job").count() == 0
    expect(page.get_by_role("link", name="Jobs", exact=True)).to_have_attribute(
        "aria-current", "page"
    )

    assert forged_post(page, f"/jobs/{job.pk}/cancel/") == 403
    job.refresh_from_db()
    assert (job.status, job.cancel_requested) == (JobStatus.PENDING, False)
    response = page.goto(f"{live_server.url}/bulk/review/?action=discard&all=1")
    assert response.status == 403


def test_an_operator_replays_all_matching_messages_from_the_list(page, live_server, top, worker):
    work = top.queue("work")
    parking = top.name("dlq")
    body = b'{"sku": "ZEBRA-42"}'
    chosen = make_messages(55, queue=parking, died_in=work, exchange="", routing_key=work,
                           body=body)  # fmt: skip
    others = make_messages(4, queue=parking, died_in=work, exchange="", routing_key=work)
    operator_on_messages(page, live_server)

    page.get_by_label("Queue").fill(parking)
    page.get_by_label("Search body and headers").fill("ZEBRA")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"q=ZEBRA"))
    page.wait_for_function("document.querySelectorAll('table.msg-table tbody tr').length === 50")
    expect(page.get_by_role("link", name="Older messages")).to_be_visible()  # more than a page
    page.get_by_role("button", name="count them").click()
    expect(page.locator("#match-count")).to_have_text("55 messages match")
    screenshot(page, "bulk-list-filtered")
    page.get_by_role("button", name="Replay all matching…").click()

    page.wait_for_url(re.compile(r"/bulk/review/\?"))
    expect(page.locator(".count")).to_contain_text("Replay 55 parked messages")
    expect(page.locator(".count")).to_contain_text("containing “ZEBRA”")
    page.get_by_label("has a consumer").uncheck()  # the queues have none here
    page.get_by_label("Reason").fill("stock service back")
    screenshot(page, "bulk-review-from-list")
    page.get_by_role("button", name="Replay 55 messages").click()

    wait_for_done(page, 55)
    expect(page.locator("table.outcomes")).to_contain_text("confirmed")
    screenshot(page, "bulk-job-done")
    wait_depth(top.ch, work, 55, timeout=30)
    assert depth(top.ch, work) == 55
    statuses = Message.objects.filter(pk__in=[m.pk for m in chosen]).values_list("status")
    assert set(statuses) == {(Status.REPLAYED,)}
    assert not Message.objects.filter(pk__in=[m.pk for m in others]).exclude(status=Status.PARKED)


def test_an_operator_discards_a_few_checked_rows(page, live_server, top, worker):
    parked = make_messages(5, queue=top.name("dlq"))
    checked = parked[1:3]
    operator_on_messages(page, live_server)

    for message in checked:
        page.get_by_label(f"Select message {message.pk}", exact=True).check()
    page.get_by_role("button", name="Discard selected…").click()

    page.wait_for_url(re.compile(r"/bulk/review/\?"))
    expect(page.locator(".count")).to_contain_text("Discard 2 chosen parked messages")
    page.get_by_label("Reason").fill("duplicates of orders already shipped")
    page.get_by_role("button", name="Discard 2 messages").click()

    wait_for_done(page, 2)
    discarded = Message.objects.filter(status=Status.DISCARDED).values_list("pk", flat=True)
    assert sorted(discarded) == sorted(m.pk for m in checked)
    assert Message.objects.filter(status=Status.PARKED).count() == 3
