"""A bulk replay whose node dies mid-job finishes on the cluster's next node, at once.

DLQ_BROKER_URL lists two nodes: node 1 is a TCP proxy in front of the broker
(tests/nodeproxy.py), node 2 the broker itself. A real Celery worker publishes a job of
thousands of messages through node 1; the proxy is SIGKILLed mid-job, dropping the
publisher's connection with a batch in flight. The job must end `done` through node 2,
every message in the target queue, the only possible duplicates the batch in flight
(dlq/jobs/running.py, README "Bulk jobs"), and without waiting to be resumed as a job
whose worker died is (DLQ_JOB_STALE_SECONDS).
"""

import time

import pytest

from dlq.jobs import batches, control
from dlq.models.actions import Job, JobStatus
from dlq.tasks import jobs as job_tasks
from tests.arrivals import check_replayed
from tests.celeryworker import Worker
from tests.drainproc import wait_for
from tests.factories import make_messages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
STALE_S = 30  # the default: how long a job left to be resumed would wait


def _job(job_id: int) -> Job:
    return Job.objects.get(pk=job_id)


def test_a_bulk_replay_fails_over_when_its_node_dies_mid_job(
    rabbit, node1, channel, top, monkeypatch
):
    for name, value in node1.cluster().items():
        monkeypatch.setenv(name, value)  # the worker's settings: node 1, then node 2
    celery_queue, work, park = top.celery_queue(), top.queue("work"), top.name("dlq")
    total = 12_000
    ids = [m.pk for m in make_messages(total, queue=park, died_in=work)]
    job = control.create_job("grace", "replay", filters={"queue": park}, target="failed_queue",
                          rate_per_s=3000, reason="node failover test")  # fmt: skip

    worker = Worker(celery_queue, env={"DLQ_JOB_STALE_SECONDS": str(STALE_S)})
    try:
        worker.wait_ready()
        job_tasks.run_job.apply_async((job.pk,), queue=celery_queue)
        wait_for(lambda: _job(job.pk).done >= 3000, 30, "the job to be under way", 0.02)
        node1.kill()
        killed_at = time.monotonic()
        assert _job(job.pk).done < total, "the job ended before node 1 died: nothing tested"
        # Its one publisher went through node 1 (Celery's own transport is elsewhere).
        assert node1.accepted(rabbit.url) == 1, worker.output()[-3000:]
        wait_for(lambda: _job(job.pk).status == JobStatus.DONE, 3 * STALE_S, "the job to end")
        took = time.monotonic() - killed_at
        output = worker.output()
    finally:
        worker.stop()

    done = _job(job.pk)
    assert (done.done, done.failed, done.outcomes) == (total, 0, {"confirmed": total})
    # Only the batch in flight when the connection dropped may arrive twice.
    duplicates = check_replayed(channel, work, ids, max_duplicates=batches.batch_size(job))
    print(f"{duplicates} duplicates; done {took:.1f} s after node 1 died")
    # It moved on to node 2 at once: a job left to be resumed waits DLQ_JOB_STALE_SECONDS.
    assert took < STALE_S / 2, f"the job waited {took:.0f} s to go on"
    assert "going on through the next node" in output and "job interrupted" not in output
