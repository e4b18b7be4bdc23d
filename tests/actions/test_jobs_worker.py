"""A real Celery worker killed with SIGKILL in the middle of a bulk replay: a new worker
finishes the job, nothing is marked replayed without a confirm, nothing is lost, and the only
duplicates are the batch that was in flight."""

import time

import pytest

from dlq.jobs import batches, control
from dlq.models import Message, Status
from dlq.models.actions import ItemState, Job, JobItem, JobStatus
from dlq.tasks import jobs as job_tasks
from tests.arrivals import check_replayed
from tests.celeryworker import Worker
from tests.factories import make_messages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _job(job_id: int) -> Job:
    return Job.objects.get(pk=job_id)


def test_it_finishes_a_job_after_its_worker_is_killed(channel, top):
    celery_queue = top.celery_queue()
    work = top.queue("work")
    park = top.name("dlq")
    total, rate = 20_000, 5000
    ids = [m.pk for m in make_messages(total, queue=park, died_in=work)]
    job = control.create_job("grace", "replay", filters={"queue": park}, target="failed_queue",
                          rate_per_s=rate, reason="worker crash test")  # fmt: skip

    first = Worker(celery_queue)
    second = None
    try:
        first.wait_ready()
        job_tasks.run_job.apply_async((job.pk,), queue=celery_queue)
        deadline = time.monotonic() + 30
        while _job(job.pk).done < 5000:
            assert time.monotonic() < deadline, first.output()[-3000:]
            time.sleep(0.02)
        first.kill()

        killed = _job(job.pk)
        assert killed.status == JobStatus.RUNNING and 5000 <= killed.done < total
        replayed = Message.objects.filter(pk__in=ids, status=Status.REPLAYED)
        assert replayed.count() == killed.done
        assert not replayed.exclude(replays__outcome="confirmed").exists()
        in_flight = JobItem.objects.filter(job=job, state=ItemState.PUBLISHING).count()
        # The batch being settled, the one being published and the one claimed next.
        assert in_flight <= 3 * batches.batch_size(job)

        second = Worker(celery_queue)
        deadline = time.monotonic() + 90
        while _job(job.pk).status != JobStatus.DONE:
            assert second.proc.poll() is None, second.output()[-3000:]
            assert time.monotonic() < deadline, second.output()[-3000:]
            time.sleep(0.1)
    finally:
        first.stop()
        if second is not None:
            second.stop()

    done = _job(job.pk)
    assert (done.done, done.failed, done.outcomes) == (total, 0, {"confirmed": total})
    # Only the batch being settled and the one being published can arrive twice
    # (dlq/jobs/running.py).
    duplicates = check_replayed(channel, work, ids, max_duplicates=2 * batches.batch_size(job))
    print(f"killed after {killed.done} settled, {in_flight} in flight: "
          f"{total + duplicates} arrivals for {total} confirmed")  # fmt: skip
