"""A replay to an exchange that does not exist, in a real browser (Debian's headless
Chromium), a live server, a real Celery worker and the real broker: the review asks for the
second confirmation, the job pauses itself after a run of identical errors, and the operator
makes the exchange and resumes it from the job page."""

import re

import pytest
from playwright.sync_api import expect

from dlq.tasks import jobs as job_tasks
from tests.browser import log_in, screenshot
from tests.factories import make_messages, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
WAIT = 60_000  # ms: a loaded two-core machine runs a worker, a browser and the server
N = 8


def test_an_operator_confirms_twice_then_resumes_the_paused_job(
    page, live_server, top, worker, monkeypatch
):
    queue = worker.proc.args[worker.proc.args.index("-Q") + 1]
    monkeypatch.setattr(job_tasks, "resume", lambda job: job_tasks.run_job.apply_async(
        (job.pk, job.wake_at.isoformat()), queue=queue))  # fmt: skip
    missing = top.name("payments")
    parked = make_messages(N, queue=top.name("dlq"))
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)
    ids = "&".join(f"id={m.pk}" for m in parked)
    page.goto(f"{live_server.url}/bulk/review/?action=replay&{ids}")

    page.get_by_label("Another exchange and routing key").check()
    page.get_by_label("Exchange (custom target)").fill(missing)
    page.get_by_label("Routing key (custom target)").fill("pay")
    second = page.get_by_label("Replay anyway although 8 of 8 sampled routes fail")
    expect(second).to_be_visible()
    expect(page.locator("#replay-failing")).to_contain_text(
        f"exchange '{missing}' does not exist: replay would fail"
    )
    # Unchecked: with it, the consumer gate would hold the job before its first publish
    # (it says the exchange does not exist); this job publishes, and pauses.
    page.get_by_label("has a consumer").uncheck()
    page.get_by_label("Reason").fill("fix deployed")
    page.get_by_role("button", name=re.compile(r"^Replay 8 messages")).click()
    expect(page.locator("#replay-failing .error")).to_contain_text(
        "8 of the 8 sampled routes fail: confirm that you replay anyway"
    )
    screenshot(page, "bulk-review-routes-fail")
    page.set_viewport_size({"width": 1440, "height": 900})
    screenshot(page, "bulk-review-routes-fail-1440")

    second.check()
    page.get_by_role("button", name=re.compile(r"^Replay 8 messages")).click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    detail = page.locator("#job-detail")
    expect(detail).to_contain_text(
        f"paused after 5 identical errors: NOT_FOUND - no exchange '{missing}'", timeout=WAIT
    )
    expect(page.get_by_role("button", name="Resume job")).to_be_visible()
    expect(page.locator("#progress")).to_contain_text("0 done, 5 failed")
    screenshot(page, "job-paused-1440")
    page.set_viewport_size({"width": 1280, "height": 800})
    screenshot(page, "job-paused")

    exchange = top.exchange("payments")
    into = top.queue("payments-in")
    top.ch.queue_bind(into, exchange, "pay")
    page.get_by_role("button", name="Resume job").click()
    expect(page.locator("#progress")).to_contain_text("3 done, 5 failed", timeout=WAIT)
    expect(page.locator("#job-status .badge")).to_have_text("done with failures")
    page.reload()
    expect(page.get_by_role("button", name="Retry the 5 failed")).to_be_visible()
    screenshot(page, "job-done-retry")
