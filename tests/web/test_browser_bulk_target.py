"""The bulk review in a real browser (Debian's headless Chromium), a live server, a real
Celery worker and the real broker: an operator picks each target, types a reason and
confirms without pressing "Preview route"; the button said where the messages go, the job
and its audit row name that target, and the messages arrive there and nowhere else."""

import json
import re

import pytest
from playwright.sync_api import expect

from dlq.models.actions import AuditEntry, Job
from tests.browser import log_in, screenshot
from tests.factories import make_messages, make_user
from tests.topology import depth, wait_depth

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
WAIT = 60_000  # ms: a loaded two-core machine runs a worker, a browser and the server
N = 3


def test_an_operator_replays_to_the_target_chosen_on_the_page(page, live_server, top, worker):
    work = top.queue("work")  # where the messages failed
    first = top.exchange("first")  # where they were first published
    from_original = top.queue("from-original")
    top.ch.queue_bind(from_original, first, "order.created")
    elsewhere = top.exchange("elsewhere")
    from_custom = top.queue("from-custom")
    top.ch.queue_bind(from_custom, elsewhere, "orders.again")
    arrives = {"failed_queue": work, "original": from_original, "custom": from_custom}
    chosen = [
        ("failed_queue", "The queue where it failed", {}, "to the failed queue"),
        ("original", "Original destination", {}, "to the original destination"),
        ("custom", "Another exchange and routing key",
         {"Exchange (custom target)": elsewhere, "Routing key (custom target)": "orders.again"},
         f"to exchange {elsewhere} with routing key orders.again"),
    ]  # fmt: skip
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)

    for target, label, fields, words in chosen:
        parked = make_messages(N, queue=top.name("dlq"), died_in=work, exchange=first,
                               routing_key="order.created")  # fmt: skip
        ids = "&".join(f"id={m.pk}" for m in parked)
        page.goto(f"{live_server.url}/bulk/review/?action=replay&{ids}")
        page.get_by_label(label).check()
        for name, value in fields.items():
            page.get_by_label(name).fill(value)
        page.get_by_label("has a consumer").uncheck()  # the queues have none here
        page.get_by_label("Reason").fill(f"replay {target}")
        button = page.get_by_role("button", name=re.compile(rf"^Replay {N} messages"))
        expect(button).to_have_text(f"Replay {N} messages {words}")
        screenshot(page, f"bulk-review-{target}")
        button.click()

        page.wait_for_url(re.compile(r"/jobs/\d+/$"))
        expect(page.locator("#job-progress")).to_have_attribute("value", str(N), timeout=WAIT)
        job = Job.objects.get(reason=f"replay {target}")
        expected = {"exchange": elsewhere, "routing_key": "orders.again"} if fields else target
        assert job.target == expected
        audited = AuditEntry.objects.get(action="job_create", job_id=job.pk)
        assert json.loads(audited.detail)["target"] == expected
        wait_depth(top.ch, arrives[target], N, timeout=30)
        assert {q: depth(top.ch, q) for q in arrives.values()} == {
            q: N if q == arrives[target] else 0 for q in arrives.values()
        }
        top.ch.queue_purge(arrives[target])
