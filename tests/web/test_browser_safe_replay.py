"""A group replayed safely in one click, in headless Chromium at 1,280 and 1,440 px (issue
28, point 5): the group page's "Safe replay" opens the review with a canary of 10 and the
contract's defaults, one confirmation with a reason starts the job on a real Celery worker,
a real consumer rejects the one poisoned message of the canary to its dead-letter exchange,
a real drainer stores it again, and the job page shows the step, the abort and the chart of
published and returned per step as they happen (by its own polling)."""

import pytest
from playwright.sync_api import expect

from dlq.models import Message
from dlq.tasks import jobs as job_tasks
from tests.browser import ARTIFACTS, log_in, screenshot
from tests.celeryworker import Worker
from tests.factories import make_messages, make_user
from tests.failingconsumer import Consumer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
POISON = b'{"order": "poison"}'


@pytest.fixture
def stack(rabbit, top, spawn, db_url, monkeypatch):
    """An exchange routing to a work queue that dead-letters into a parking queue a real
    drainer stores from, a real consumer of the work queue failing the poisoned message, and
    a worker on the test's own Celery queue, which the page's jobs are sent to."""
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    events = top.exchange("events")
    top.ch.queue_bind(work, events, "order.created")
    spawn([park], db_url)
    celery_queue = top.celery_queue()
    worker = Worker(celery_queue)
    consumer = Consumer(rabbit.url, work, [POISON])
    monkeypatch.setattr(
        job_tasks, "start",
        lambda job: job_tasks.run_job.apply_async((job.pk,), queue=celery_queue),
    )  # fmt: skip
    worker.wait_ready()
    yield {"park": park, "work": work, "events": events}
    worker.stop()
    consumer.stop()


def _stored(stack) -> str:
    """30 parked messages of one group, the poisoned one first (in the canary)."""
    kw = {"queue": stack["park"], "died_in": stack["work"], "exchange": stack["events"]}
    make_messages(1, body=POISON, **kw)
    for i in range(29):
        make_messages(1, body=b'{"order": %d}' % i, **kw)
    return Message.objects.values_list("group", flat=True).distinct().get()


@pytest.mark.parametrize("width", [1280, 1440])
def test_a_group_is_replayed_safely_in_one_click(browser, live_server, stack, width):
    group = _stored(stack)
    operator = make_user("operator", password=PASSWORD)
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    log_in(page, live_server, operator.username, PASSWORD)

    page.goto(f"{live_server.url}/groups/{group}/")
    screenshot(page, f"safe-replay-group-{width}")
    page.get_by_role("link", name="Safe replay…").click()

    page.wait_for_url(f"{live_server.url}/bulk/review/?*")
    expect(page.get_by_label("Canary (messages first)")).to_have_value("10")
    expect(page.get_by_label("Ramp (each step this many times the last)")).to_have_value("2")
    expect(page.get_by_label("Watch each step (seconds)")).to_have_value("30")
    expect(page.get_by_label("Wait until every queue the route reaches")).to_be_checked()
    expect(page.locator("#safe-why")).to_contain_text("a canary of 10 first")
    page.get_by_label("Reason").fill("fix deployed")
    screenshot(page, f"safe-replay-review-{width}")
    page.get_by_role("button", name="Replay 30 messages to the original destination").click()

    page.wait_for_url(f"{live_server.url}/jobs/*/")
    # The canary's poisoned message comes back: more than the 0 allowed, the job stops.
    expect(page.locator("#job-status .badge")).to_have_text("aborted")
    expect(page.locator("#job-steps")).to_contain_text("Step 1 (a canary of 10")
    expect(page.locator("#job-detail")).to_contain_text(
        f"aborted: 1 replayed message came back (1 from {stack['work']})"
    )
    chart = page.locator("#steps-chart")
    expect(chart.locator(".step-published")).to_have_attribute("data-n", "10")
    expect(chart.locator(".step-returned")).to_have_attribute("data-n", "1")
    expect(chart.locator("desc")).to_have_text("step 1: 10 published, 1 returned.")
    screenshot(page, f"safe-replay-job-{width}")
    page.screenshot(path=str(ARTIFACTS / f"safe-replay-job-{width}-window.png"))
    # The other 20 never left; the one that came back is parked again, a new message.
    assert Message.objects.filter(queue=stack["park"], status="parked").count() == 21
    context.close()
