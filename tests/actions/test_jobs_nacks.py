"""A bulk job and the broker's nacks (dlq/jobs/running.py, _retry_nacked): a nacked
message is published again after growing pauses, so a queue that takes messages again in
time gets them all; one that stays full (`x-overflow: reject-publish`) ends `nacked` after
one wait, not one per batch; cancel stops the wait; the job says why it is not moving."""

import time

import pytest

from dlq.jobs import batches, control, running
from dlq.models import Message, Status
from dlq.models.actions import ItemState, Job, JobItem, JobStatus, Replay
from tests.actions.test_jobs_bulk import Runner, _statuses
from tests.arrivals import arrivals
from tests.factories import client_for, make_messages, make_user
from tests.topology import depth, wait_depth
from tests.uiops import body

pytestmark = pytest.mark.django_db(transaction=True)

WAITING = "waiting for the broker to take messages again"


def _job(top, queue: str, count: int, **fields) -> tuple[str, Job]:
    park = top.name("dlq")
    make_messages(count, queue=park, died_in=queue)
    job = control.create_job("frank", "replay", filters={"queue": park}, target="failed_queue",
                          reason="nack test", **fields)  # fmt: skip
    return park, job


def _details_while(runner: Runner, job_id: int, until=None) -> list[str]:
    """The job's status_detail as its pages show it, polled while it runs; `until(detail)`
    true stops polling (the runner goes on)."""
    seen = []
    while runner.is_alive():
        detail = Job.objects.filter(pk=job_id).values_list("status_detail", flat=True).get()
        seen.append(detail)
        if until and until(detail):
            break
        time.sleep(0.05)
    return seen


def test_a_job_into_a_queue_that_stays_full_ends_nacked_after_one_wait(channel, top, monkeypatch):
    full = top.queue("full", **{"x-max-length": 0, "x-overflow": "reject-publish"})
    monkeypatch.setattr(batches, "BATCH", 10)  # three batches
    park, job = _job(top, full, 30)
    budget = sum(running.nack_pauses())
    assert budget == 7.5  # the default: 0.5 s doubling, four tries

    runner = Runner(job.pk)
    started = time.monotonic()
    runner.start()
    seen = _details_while(runner, job.pk)
    runner.join(60)
    took = time.monotonic() - started

    assert runner.result == JobStatus.DONE
    # The pauses are spent once, on the first batch: not once per batch (3 x 7.5 s).
    assert budget <= took < budget + 5, took
    done = Job.objects.get(pk=job.pk)
    assert (done.done, done.failed, done.outcomes) == (0, 30, {"nacked": 30})
    assert done.status_detail == ""
    assert any(WAITING in d and "refused 10" in d for d in seen), set(seen)
    assert _statuses(park) == {Status.PARKED: 30}
    assert set(Replay.objects.filter(job=job).values_list("outcome", flat=True)) == {"nacked"}
    details = set(JobItem.objects.filter(job=job).values_list("detail", flat=True))
    assert len(details) == 1 and "basic.nack" in details.pop()
    assert "x-overflow reject-publish" in control.failures_by_error(done)[0]["error"]


def test_a_job_gets_every_message_into_a_queue_that_takes_messages_again(channel, top):
    """A queue full when the job begins (reject-publish), emptied by its consumer while the
    job waits: every message arrives once, none is nacked."""
    queue = top.queue("busy", **{"x-max-length": 20, "x-overflow": "reject-publish"})
    for _ in range(20):
        channel.basic_publish("", queue, b"earlier")
    wait_depth(channel, queue, 20)
    park, job = _job(top, queue, 20)

    runner = Runner(job.pk)
    runner.start()
    seen = _details_while(runner, job.pk, until=lambda d: WAITING in d)
    # What an operator polling the job sees meanwhile.
    page = body(client_for(make_user("viewer")).get(f"/jobs/{job.pk}/"))
    api = client_for(make_user("viewer"), token=True).get(f"/api/v1/jobs/{job.pk}").json()
    channel.queue_purge(queue)  # the consumer catches up
    runner.join(30)

    assert runner.result == JobStatus.DONE
    assert seen and WAITING in seen[-1]
    assert api["status"] == "running" and WAITING in api["status_detail"], api
    assert "refused 20 (basic.nack" in api["status_detail"]
    assert WAITING in page
    done = Job.objects.get(pk=job.pk)
    assert (done.done, done.failed, done.outcomes) == (20, 0, {"confirmed": 20})
    assert done.status_detail == ""
    assert _statuses(park) == {Status.REPLAYED: 20}
    ids = set(Message.objects.filter(queue=park).values_list("id", flat=True))
    got = arrivals(channel, queue)
    assert sorted(origin for origin, _ in got) == sorted(ids), len(got)
    assert {replay_id for _, replay_id in got} == set(
        Replay.objects.filter(job=job).values_list("replay_id", flat=True)
    )


def test_cancelling_a_job_stops_its_wait_for_the_broker(channel, top, monkeypatch):
    full = top.queue("full", **{"x-max-length": 0, "x-overflow": "reject-publish"})
    monkeypatch.setattr(batches, "BATCH", 10)
    park, job = _job(top, full, 50)

    runner = Runner(job.pk)
    runner.start()
    _details_while(runner, job.pk, until=lambda d: WAITING in d)
    control.cancel_job(job.pk, "frank")
    cancelled_at = time.monotonic()
    runner.join(30)

    assert runner.result == JobStatus.CANCELLED
    assert time.monotonic() - cancelled_at < 3  # within a pause, not the whole 7.5 s
    done = Job.objects.get(pk=job.pk)
    # The batch that waited, and the one claimed meanwhile (its nacks not waited for again).
    assert done.outcomes == {"nacked": done.failed} and done.failed <= 20
    assert done.status_detail == ""
    assert _statuses(park) == {Status.PARKED: 50}
    assert not JobItem.objects.filter(job=job, state=ItemState.PUBLISHING).exists()
    assert depth(channel, full) == 0
