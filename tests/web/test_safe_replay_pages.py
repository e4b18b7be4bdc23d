"""Safe replay on the pages: the bulk review offers it with its defaults shown and posts it
with the confirmation; a job's page says its step, its returns and why it waits or was
aborted."""

import html
import re

import pytest

from dlq.models import Message
from dlq.models.actions import ItemState, Job, JobItem, JobStatus
from tests.factories import make_messages, post
from tests.uiops import REPLAY_FAILING, a_job, body, review_url

pytestmark = pytest.mark.django_db


def test_the_review_offers_a_safe_replay_with_its_defaults(operator):
    message = make_messages(1)[0]
    page = body(operator.get(review_url("replay", id=message.pk)))
    assert "Safe replay" in page
    assert 'name="safe-ramp" value="2"' in page and 'name="safe-watch_seconds" value="30"' in page
    assert 'name="safe-require_consumers" id="id_safe-require_consumers" checked' in page
    assert "empty: 0 with a canary, no limit without" in page
    # A discard has no steps.
    assert "Safe replay" not in body(operator.get(review_url("discard", id=message.pk)))


def test_the_confirmation_creates_a_job_with_a_canary(
    operator, started, django_capture_on_commit_callbacks
):
    messages = make_messages(5)
    url = review_url("replay", id=messages[0].pk) + "".join(f"&id={m.pk}" for m in messages[1:])
    with django_capture_on_commit_callbacks(execute=True):
        response = post(operator, url, {"replay-target": "failed_queue", "reason": "fix deployed",
                                        "safe-canary": "2", "safe-ramp": "3",
                                        "safe-watch_seconds": "5",
                                        "safe-require_consumers": "on",
                                        **REPLAY_FAILING})  # fmt: skip
    assert response.status_code == 302, body(response)
    job = Job.objects.get()
    assert (job.canary, job.ramp, job.watch_seconds, job.max_returns, job.require_consumers) == (
        2, 3.0, 5, 0, True)  # fmt: skip
    assert started == [job.pk]


def test_a_bad_safe_field_is_refused_on_the_page(operator, started):
    message = make_messages(1)[0]
    response = post(operator, review_url("replay", id=message.pk),
                    {"replay-target": "original", "reason": "r", "safe-canary": "0",
                     "safe-ramp": "1"})  # fmt: skip
    assert response.status_code == 400
    page = body(response)
    assert "Ensure this value is greater than or equal to 1." in page
    assert "Ensure this value is greater than or equal to 1.01." in page
    assert not Job.objects.exists() and started == []


def test_the_job_page_says_why_it_waits_and_why_it_was_aborted(viewer):
    job = a_job([m.pk for m in make_messages(30)], action="replay", canary=10, max_returns=0)
    waits = "queue 'orders' has no consumer"
    Job.objects.filter(pk=job.pk).update(status=JobStatus.WAITING, step=1, done=10,
                                         status_detail=waits)  # fmt: skip
    page = html.unescape(body(viewer.get(f"/jobs/{job.pk}/")))
    assert waits in page
    assert "Step 1 (a canary of 10, then ×2 a step, each watched 30 s)" in page
    assert "0 came back (it stops after more than 0)" in page
    assert 'hx-trigger="every 1500ms"' in page  # a waiting job is live

    why = "aborted: 1 replayed message came back (1 from orders), more than the 0 allowed"
    Job.objects.filter(pk=job.pk).update(status=JobStatus.ABORTED, returned=1, status_detail=why)
    page = html.unescape(body(viewer.get(f"/jobs/{job.pk}/")))
    assert why in page and "1 came back" in page and 'class="badge badge-aborted"' in page
    assert 'hx-trigger="every 1500ms"' not in page


def _canary_value(text: str) -> str | None:
    """The canary field's pre-filled value, None when it is empty."""
    tag = re.search(r'<input[^>]*name="safe-canary"[^>]*>', text).group(0)
    value = re.search(r'value="([^"]*)"', tag)
    return value.group(1) if value else None


def test_a_large_selection_defaults_to_a_canary_and_a_small_one_to_one_step(operator):
    make_messages(101, queue="big.dlq")
    make_messages(100, queue="small.dlq")
    big = body(operator.get(review_url("replay", all=1, queue="big.dlq")))
    assert _canary_value(big) == "10"
    assert "More than 100 messages: a canary of 10 goes first by default." in big
    small = body(operator.get(review_url("replay", all=1, queue="small.dlq")))
    assert _canary_value(small) is None
    assert "100 messages or fewer: one step by default." in small
    # Asked for from a group's or a queue's page: a canary whatever the count.
    asked = body(operator.get(review_url("replay", all=1, queue="small.dlq", safe=1)))
    assert _canary_value(asked) == "10"


def test_the_group_page_and_the_queue_rows_link_to_a_safe_replay(operator, viewer):
    group = make_messages(2, queue="pay.dlq")[0].group
    page = html.unescape(body(operator.get(f"/groups/{group}/")))
    safe = f"/bulk/review/?action=replay&all=1&status=parked&group={group}&safe=1"
    assert f'id="safe-replay" href="{safe}"' in page
    overview = html.unescape(body(operator.get("/")))
    queue = "/bulk/review/?action=replay&all=1&status=parked&queue=pay.dlq&vhost=%2F&safe=1"
    assert queue in overview
    # Only an operator may replay.
    assert "Safe replay" not in body(viewer.get(f"/groups/{group}/"))
    assert "Safe replay" not in body(viewer.get("/"))


def test_the_job_page_charts_published_and_returned_per_step(viewer):
    ids = [m.pk for m in make_messages(30)]
    job = a_job(ids, action="replay", canary=4, max_returns=5)
    items = list(job.items.order_by("id"))
    # Step 1 published 4 (one failed), step 2 published 8; 2 of step 2's came back, 1 of 1's.
    for item in items[:4]:
        JobItem.objects.filter(pk=item.pk).update(step=1, state=ItemState.DONE)
    JobItem.objects.filter(pk=items[3].pk).update(state=ItemState.FAILED)
    for item in items[4:12]:
        JobItem.objects.filter(pk=item.pk).update(step=2, state=ItemState.DONE)
    for previous in (items[0], items[5], items[6]):
        back = make_messages(1)[0]
        Message.objects.filter(pk=back.pk).update(previous_id=previous.message_id)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.WAITING, step=2, done=11, failed=1,
                                         returned=3)  # fmt: skip
    page = body(viewer.get(f"/jobs/{job.pk}/"))
    assert "step 1: 3 published, 1 returned; step 2: 8 published, 2 returned." in page
    found = re.findall(r'class="step-(\w+)" data-step="(\d)" data-n="(\d+)"', page)
    bars = {(kind, step): n for kind, step, n in found}
    assert bars == {("published", "1"): "3", ("returned", "1"): "1",
                    ("published", "2"): "8", ("returned", "2"): "2"}  # fmt: skip
    # The polled fragment carries it too.
    fragment = body(viewer.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true"))
    assert 'id="steps-chart"' in fragment
    # A plain replay in one step has no chart.
    plain = a_job([m.pk for m in make_messages(2)], action="replay")
    assert 'id="steps-chart"' not in body(viewer.get(f"/jobs/{plain.pk}/"))
