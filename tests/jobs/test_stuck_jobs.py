"""A job that cannot succeed stops (issue 28, point 6): a replay to an exchange that does not
exist pauses after DLQ_JOB_PAUSE_AFTER_ERRORS identical errors, holding nothing, until its
operator resumes or cancels it; the failed messages are retried in one action. A real Celery
worker runs the jobs on the real broker; the tests wait on what the job shows."""

import json
import time

import pytest

from dlq.jobs import control, running
from dlq.models import Message, Status
from dlq.models.actions import AuditAction, AuditEntry, ItemState, Job, JobStatus, Replay
from dlq.tasks import jobs as job_tasks
from tests.celeryworker import Worker
from tests.factories import client_for, make_messages, make_user, post

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def setup(top, monkeypatch):
    """A worker on the test's own Celery queue; the API hands its jobs and resumed turns to
    it, as job_tasks.start and job_tasks.resume do, only on that queue."""
    queue = top.celery_queue()
    worker = Worker(queue)
    monkeypatch.setattr(
        job_tasks, "start", lambda job: job_tasks.run_job.apply_async((job.pk,), queue=queue)
    )
    monkeypatch.setattr(job_tasks, "resume", lambda job: job_tasks.run_job.apply_async(
        (job.pk, job.wake_at.isoformat()), queue=queue))  # fmt: skip
    worker.wait_ready()
    yield {"queue": queue, "worker": worker, "api": client_for(make_user("operator"), token=True)}
    worker.stop()


def _until(job_id: int, predicate, what: str, worker, timeout: float = 60.0) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        job = Job.objects.get(pk=job_id)
        if predicate(job):
            return job
        assert time.monotonic() < deadline, (
            f"{what}: the job reads {job.status} {job.status_detail!r}\n{worker.output()[-3000:]}"
        )
        time.sleep(0.05)


def _paused_job(top, setup, n: int = 12) -> tuple[dict, list[int], str]:
    """A job of `n` parked messages to an exchange that does not exist, created through the
    API and paused by its worker: (the job as the API shows it, the ids, the exchange)."""
    missing = top.name("payments")
    ids = [m.pk for m in make_messages(n, queue=top.name("dlq"))]
    answer = setup["api"].post(
        "/api/v1/jobs",
        {"action": "replay", "ids": ids, "target": {"exchange": missing, "routing_key": "pay"},
         "reason": "fix deployed"},
        content_type="application/json",
    )  # fmt: skip
    assert answer.status_code == 202, answer.content
    job_id = answer.json()["id"]
    _until(job_id, lambda j: j.status == JobStatus.WAITING, "paused", setup["worker"])
    return setup["api"].get(f"/api/v1/jobs/{job_id}").json(), ids, missing


def test_a_job_to_a_missing_exchange_pauses_then_goes_on_when_resumed(top, setup):
    paused, ids, missing = _paused_job(top, setup)

    assert paused["status"] == "waiting" and paused["paused"] is True
    assert paused["status_detail"] == (
        f"paused after 5 identical errors: NOT_FOUND - no exchange '{missing}' in vhost '/';"
        " resume or cancel"
    )
    # Five tries, not twelve; the other seven wait, parked, nothing claimed or half-done.
    assert (paused["done"], paused["failed"]) == (0, 5)
    job = Job.objects.get(pk=paused["id"])
    assert job.items.filter(state=ItemState.PENDING).count() == 7
    assert Message.objects.filter(pk__in=ids, status=Status.PARKED).count() == 12
    assert job.wake_at is None  # no turn is due: it waits for its operator
    # Neither a stray turn nor beat takes it up.
    assert running.run_job(job.pk) == "not due"
    queued = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(job_tasks.run_job, "delay", lambda *a, **k: queued.append(a))
        job_tasks.resume_jobs()
    assert (job.pk,) not in queued
    assert Job.objects.get(pk=job.pk).paused

    # The operator creates the exchange and binds a queue, then resumes.
    exchange = top.exchange("payments")
    into = top.queue("payments-in")
    top.ch.queue_bind(into, exchange, "pay")
    resumed = setup["api"].post(f"/api/v1/jobs/{job.pk}/resume")
    assert resumed.status_code == 200, resumed.content
    done = _until(job.pk, lambda j: j.status == JobStatus.DONE, "done", setup["worker"])
    assert (done.done, done.failed, done.status_detail) == (7, 5, "")
    assert top.ch.queue_declare(into, passive=True).method.message_count == 7
    assert AuditEntry.objects.filter(action=AuditAction.JOB_RESUME, job_id=job.pk).count() == 1
    # Resuming a job that is not paused is a conflict.
    assert setup["api"].post(f"/api/v1/jobs/{job.pk}/resume").status_code == 409

    # Retry the failed: a new job of exactly those five, with new replay ids.
    retry = setup["api"].post(f"/api/v1/jobs/{job.pk}/retry-failed", {"reason": "exchange made"},
                              content_type="application/json")  # fmt: skip
    assert retry.status_code == 202, retry.content
    new = retry.json()
    failed = set(job.items.filter(state=ItemState.FAILED).values_list("message_id", flat=True))
    new_items = Job.objects.get(pk=new["id"]).items
    assert set(new_items.values_list("message_id", flat=True)) == failed and len(failed) == 5
    assert new["target"] == {"exchange": missing, "routing_key": "pay"}
    retried = _until(new["id"], lambda j: j.status == JobStatus.DONE, "retry done",
                     setup["worker"])  # fmt: skip
    assert (retried.done, retried.failed) == (5, 0)
    assert Message.objects.filter(pk__in=ids, status=Status.REPLAYED).count() == 12
    old_ids = set(Replay.objects.filter(job=job).values_list("replay_id", flat=True))
    new_ids = set(Replay.objects.filter(job_id=new["id"]).values_list("replay_id", flat=True))
    assert len(new_ids) == 5 and not new_ids & old_ids
    created = AuditEntry.objects.get(action=AuditAction.JOB_CREATE, job_id=new["id"])
    assert json.loads(created.detail)["retry_of"] == job.pk and created.reason == "exchange made"
    # Nothing failed in the retry: nothing to retry.
    again = setup["api"].post(f"/api/v1/jobs/{new['id']}/retry-failed", {"reason": "again"},
                              content_type="application/json")  # fmt: skip
    assert again.status_code == 409


def test_a_paused_job_cancelled_ends_with_the_rest_parked(top, setup):
    paused, ids, _ = _paused_job(top, setup, n=8)

    cancelled = setup["api"].post(f"/api/v1/jobs/{paused['id']}/cancel")

    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    job = Job.objects.get(pk=paused["id"])
    assert (job.done, job.failed) == (0, 5)
    assert Message.objects.filter(pk__in=ids, status=Status.PARKED).count() == 8
    assert not job.items.filter(state=ItemState.PUBLISHING).exists()
    assert setup["api"].post(f"/api/v1/jobs/{job.pk}/resume").status_code == 409
    # Its failed ones can still be retried (a reason is required).
    blank = setup["api"].post(f"/api/v1/jobs/{job.pk}/retry-failed", {"reason": " "},
                              content_type="application/json")  # fmt: skip
    assert blank.status_code == 400


def test_a_viewer_may_neither_resume_nor_retry(top, setup):
    paused, _, _ = _paused_job(top, setup, n=6)
    viewer = client_for(make_user("viewer"), token=True)

    resume = viewer.post(f"/api/v1/jobs/{paused['id']}/resume")
    retry = viewer.post(f"/api/v1/jobs/{paused['id']}/retry-failed", {"reason": "x"},
                        content_type="application/json")  # fmt: skip

    assert (resume.status_code, retry.status_code) == (403, 403)
    page = client_for(make_user("viewer"))
    assert post(page, f"/jobs/{paused['id']}/resume/").status_code == 403
    assert post(page, f"/jobs/{paused['id']}/retry-failed/", {"reason": "x"}).status_code == 403
    assert Job.objects.get(pk=paused["id"]).paused


def test_resumed_it_goes_on_past_the_error_it_paused_on(top, settings):
    """The operator chose to go on: the same error does not pause the job again (in process:
    the turns are run_job's, as the worker runs them)."""
    settings.DLQ_JOB_PAUSE_AFTER_ERRORS = 3
    ids = [m.pk for m in make_messages(9, queue=top.name("dlq"))]
    target = {"exchange": top.name("nowhere"), "routing_key": "k"}
    job = control.create_job("grace", "replay", ids=ids, target=target, reason="try")

    assert running.run_job(job.pk) == JobStatus.WAITING
    paused = Job.objects.get(pk=job.pk)
    assert (paused.paused, paused.failed, paused.paused_on) == (
        True, 3, f"NOT_FOUND - no exchange '{target['exchange']}' in vhost '/'")  # fmt: skip

    resumed = control.resume_job(job.pk, make_user("operator"))
    assert running.run_job(job.pk, due=resumed.wake_at) == JobStatus.DONE
    done = Job.objects.get(pk=job.pk)
    assert (done.done, done.failed, done.status_detail) == (0, 9, "")
    assert Message.objects.filter(pk__in=ids, status=Status.PARKED).count() == 9
