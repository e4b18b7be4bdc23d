"""From the Messages list to a finished bulk job, in a real browser with a real Celery worker:
filter, select all matching (more than one page), review, confirm with a reason, watch the
job's progress bar reach done and find the messages in the real queue; and a bulk discard
of a few checked rows."""

import re

import pytest
from playwright.sync_api import expect

from dlq.models import Message, Status
from tests.browser import log_in, screenshot
from tests.celeryworker import jobs_on_worker
from tests.factories import make_messages, make_user
from tests.topology import Topology, depth, wait_depth

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a-long-browser-password"
WAIT = 60_000  # ms: a loaded two-core machine runs a worker, a browser and the server


@pytest.fixture
def top(channel, cleanup_queues, unique):
    return Topology(channel, cleanup_queues, unique)


@pytest.fixture
def worker(top, monkeypatch):
    with jobs_on_worker(top, monkeypatch) as running:
        yield running


def operator_on_messages(page, live_server):
    operator = make_user("operator", password=PASSWORD)
    log_in(page, live_server, operator.username, PASSWORD)
    page.get_by_role("link", name="Messages", exact=True).click()
    page.locator("table.msg-table").wait_for()


def wait_for_done(page, total: int) -> None:
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    expect(page.locator("#job-progress")).to_have_attribute("value", str(total), timeout=WAIT)
    expect(page.locator("#progress .badge")).to_have_text("done")


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
    expect(page.locator(".count")).to_contain_text("55 parked messages will be replayed")
    expect(page.locator("ul.selection")).to_contain_text("ZEBRA")
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
    expect(page.locator(".count")).to_contain_text("2 parked messages will be discarded")
    page.get_by_label("Reason").fill("duplicates of orders already shipped")
    page.get_by_role("button", name="Discard 2 messages").click()

    wait_for_done(page, 2)
    discarded = Message.objects.filter(status=Status.DISCARDED).values_list("pk", flat=True)
    assert sorted(discarded) == sorted(m.pk for m in checked)
    assert Message.objects.filter(status=Status.PARKED).count() == 3
