"""Retrying a job's failed messages into a queue the console drains, in a real browser
(Debian's headless Chromium) and a live server: the page refuses, says why, offers the
override, and a ticked retry is made (the job is handed to the worker)."""

import re

import pytest
from playwright.sync_api import expect

from dlq.jobs import control, running
from dlq.tasks import jobs as job_tasks
from tests.browser import log_in, screenshot
from tests.factories import make_messages, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"


def test_a_retry_into_a_drained_queue_is_offered_the_override(
    page, live_server, top, settings, monkeypatch
):
    settings.DLQ_QUEUES = [top.name("*.dlq")]
    exchange = top.name("payments")  # not there yet: the job's replays fail
    messages = make_messages(3, queue=top.name("a.dlq"), exchange=exchange, routing_key="k",
                             died_in=top.name("work"))  # fmt: skip
    job = control.create_job("grace", "replay", ids=[m.pk for m in messages], target="original",
                             reason="fix deployed")  # fmt: skip
    running.run_job(job.pk)
    top.exchange("payments")
    loop = top.queue("loop.dlq")
    top.ch.queue_bind(loop, exchange, "k")
    started = []
    monkeypatch.setattr(job_tasks, "start", started.append)
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)
    page.goto(f"{live_server.url}/jobs/{job.pk}/")

    expect(page.locator("#job-status .badge")).to_have_text("done with failures")
    page.get_by_label("Reason").fill("exchange made")
    page.get_by_role("button", name="Retry the 3 failed").click()
    expect(page.locator("#retry-failed .error")).to_contain_text(
        f"the route reaches '{loop}', which the console itself drains"
    )
    screenshot(page, "job-retry-into-drained-refused")
    page.get_by_label("Replay into a queue the console drains anyway").check()
    page.get_by_role("button", name="Retry the 3 failed").click()

    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    assert [f"/jobs/{j.pk}/" for j in started] == [page.url.removeprefix(live_server.url)]
    expect(page.get_by_role("status").or_(page.locator(".messages"))).to_contain_text(
        f"a replay of the 3 failed messages of job {job.pk}"
    )
