"""Safe bulk replay end to end (contract.md, "Safe bulk replay"): a real Celery worker runs
the job, a real consumer process acks or rejects (to the queue's dead-letter exchange) what
it is told, and a real drainer stores what comes back, linked by dlq-origin-id. The tests
wait on what the job shows (its status, step and detail in the API's terms), never on time.
"""

import time
from collections import Counter

import pytest

from dlq.jobs import control, steps
from dlq.models import Message, Status
from dlq.models.actions import ItemState, Job, JobStatus, Replay
from dlq.tasks import jobs as job_tasks
from tests.celeryworker import Worker
from tests.drainproc import wait_for
from tests.factories import make_messages
from tests.failingconsumer import Consumer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

POISON = b'{"order": "poison"}'


def _job(job_id: int) -> Job:
    return Job.objects.get(pk=job_id)


def _stored(park: str, work: str, good: int, poison: int) -> list[int]:
    """Parked messages that died in `work`: `poison` poisoned ones first, then the rest."""
    bad = make_messages(poison, queue=park, died_in=work, body=POISON)
    fine = [m for i in range(good) for m in make_messages(1, queue=park, died_in=work,
                                                          body=b'{"order": %d}' % i)]  # fmt: skip
    return [m.pk for m in bad + fine]


@pytest.fixture
def setup(rabbit, top, spawn, db_url):
    """A work queue dead-lettering into a parking queue a real drainer stores from, and a
    worker on the test's own Celery queue; the test starts the consumer."""
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    drainer = spawn([park], db_url)
    celery_queue = top.celery_queue()
    worker = Worker(celery_queue)
    started = []

    def consumer(fail=()):
        started.append(Consumer(rabbit.url, work, list(fail)))
        return started[-1]

    yield {"park": park, "work": work, "queue": celery_queue, "worker": worker,
           "consumer": consumer, "drainer": drainer}  # fmt: skip
    worker.stop()
    for c in started:
        c.stop()


def _start(job: Job, queue: str) -> None:
    job_tasks.run_job.apply_async((job.pk,), queue=queue)


def _until(job_id: int, predicate, what: str, timeout: float = 60.0, worker=None) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        job = _job(job_id)
        if predicate(job):
            return job
        log = worker.output()[-3000:] if worker else ""
        assert time.monotonic() < deadline, f"{what}: the job reads {job.status} step {job.step}"\
            f" {job.status_detail!r}\n{log}"  # fmt: skip
        time.sleep(0.05)


def test_a_canary_that_comes_back_aborts_the_job_and_the_rest_stay_parked(setup):
    park, work = setup["park"], setup["work"]
    ids = _stored(park, work, good=28, poison=2)
    consumer = setup["consumer"]([POISON])
    job = control.create_job("grace", "replay", filters={"queue": park}, target="failed_queue",
                             reason="fix deployed", **control.safety("failed_queue",
                                                                     {"canary": 5}))  # fmt: skip
    assert (job.canary, job.max_returns, job.require_consumers) == (5, 0, True)
    setup["worker"].wait_ready()
    _start(job, setup["queue"])

    aborted = _until(job.pk, lambda j: j.status == JobStatus.ABORTED, "aborted",
                     worker=setup["worker"])  # fmt: skip

    assert (aborted.step, aborted.done, aborted.returned) == (1, 5, 2)
    # The job page's chart: what the step published, and how many of those came back.
    assert steps.per_step(aborted) == [
        {"step": 1, "size": 5, "published": 5, "failed": 0, "returned": 2}
    ]
    assert aborted.status_detail == (
        f"aborted: 2 replayed messages came back (2 from {work}), more than the 0 allowed;"
        " the rest stay parked"
    )
    came_back = Message.objects.filter(previous_id__in=ids[:2])
    assert came_back.count() == 2 and set(came_back.values_list("queue", flat=True)) == {park}
    # Only the canary went out; the other 25 never left, and stay parked.
    assert sorted(v for v, _, _ in consumer.deliveries()) == ["ack"] * 3 + ["reject"] * 2
    assert Message.objects.filter(pk__in=ids[5:], status=Status.PARKED).count() == 25
    assert aborted.items.filter(state=ItemState.PENDING).count() == 25
    # Seen within a second or two of the return's storing (the last of the two).
    stored_at = max(came_back.values_list("received_at", flat=True))
    assert (aborted.finished_at - stored_at).total_seconds() < 4, aborted.finished_at - stored_at


def test_it_ramps_step_by_step_and_a_killed_worker_resumes_without_publishing_again(setup):
    park, work = setup["park"], setup["work"]
    ids = _stored(park, work, good=14, poison=0)
    consumer = setup["consumer"]()
    job = control.create_job("grace", "replay", filters={"queue": park}, target="failed_queue",
                             reason="fix deployed", canary=2, ramp=2, watch_seconds=2,
                             max_returns=0, require_consumers=True)  # fmt: skip
    first = setup["worker"]
    first.wait_ready()
    _start(job, setup["queue"])

    watching = _until(job.pk, lambda j: j.status == JobStatus.WAITING and j.step == 1,
                      "watching step 1", worker=first)  # fmt: skip
    assert watching.done == 2 and watching.status_detail.startswith("watching step 1 for 2 s")
    first.kill()  # mid-ramp: the job waits, its next turn was this worker's
    second = Worker(setup["queue"])
    try:
        second.wait_ready()
        steps_seen, beat = set(), [0.0]

        def finished(j: Job) -> bool:
            steps_seen.add((j.step, j.done))
            if time.monotonic() - beat[0] > 2:  # as beat does, for a turn the kill cut short
                job_tasks.resume_jobs.apply_async(queue=setup["queue"])
                beat[0] = time.monotonic()
            return j.status == JobStatus.DONE

        done = _until(job.pk, finished, "done", worker=second)
    finally:
        second.stop()

    assert (done.step, done.done, done.failed, done.returned) == (3, 14, 0, 0)
    assert {(1, 2), (2, 6), (3, 14)} <= steps_seen  # 2, then 4, then 8
    # Each item keeps the step that published it, across the kill.
    assert [(r["step"], r["published"]) for r in steps.per_step(done)] == [(1, 2), (2, 4), (3, 8)]
    assert done.status_detail == ""
    # Each message published once: one confirmed replay each, one delivery each.
    replays = Replay.objects.filter(job=job)
    assert Counter(replays.values_list("outcome", flat=True)) == {"confirmed": 14}
    wait_for(lambda: len(consumer.deliveries()) >= 14, 10, "14 deliveries")
    delivered = consumer.deliveries()
    assert len(delivered) == 14 and len({r for _, r, _ in delivered}) == 14
    assert sorted(int(o) for _, _, o in delivered) == sorted(ids)


def test_it_waits_for_a_consumer_and_goes_on_by_itself_when_one_is_back(setup):
    park, work = setup["park"], setup["work"]
    ids = _stored(park, work, good=6, poison=0)
    job = control.create_job("grace", "replay", filters={"queue": park}, target="failed_queue",
                             reason="fix deployed", canary=2, watch_seconds=0,
                             require_consumers=True)  # fmt: skip
    setup["worker"].wait_ready()
    _start(job, setup["queue"])

    waiting = _until(job.pk, lambda j: j.status == JobStatus.WAITING and j.status_detail,
                     "waiting for a consumer", worker=setup["worker"])  # fmt: skip
    assert waiting.status_detail == f"queue {work!r} has no consumer"
    assert (waiting.step, waiting.done) == (0, 0) and not Replay.objects.filter(job=job).exists()

    consumer = setup["consumer"]()
    done = _until(job.pk, lambda j: j.status == JobStatus.DONE, "done", worker=setup["worker"])
    assert (done.done, done.step) == (6, 2)  # 2, then the 4 left
    wait_for(lambda: len(consumer.deliveries()) == 6, 10, "6 deliveries")
    assert sorted(int(o) for _, _, o in consumer.deliveries()) == sorted(ids)
