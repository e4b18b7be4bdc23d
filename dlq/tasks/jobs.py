"""Celery entry points for bulk jobs: thin wrappers over dlq/jobs/running.py."""

from datetime import UTC, datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Q

from dlq.actions import message as message_actions
from dlq.jobs import running
from dlq.models.actions import Job, JobStatus


@shared_task(
    name="dlq.jobtasks.run_job", acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def run_job(job_id: int, due: str | None = None) -> str:
    # acks_late + reject_on_worker_lost: a worker killed mid-job returns the task to the
    # queue; the next worker resumes once the job's heartbeat is stale (running.claim_job).
    # A waiting job's next turn is a task with a countdown, carrying the turn's time (`due`):
    # a worker killed while holding it returns it to the queue too.
    status = running.run_job(job_id, due=datetime.fromisoformat(due) if due else None)
    if status in ("busy", "interrupted"):
        run_job.apply_async((job_id,), countdown=settings.DLQ_JOB_STALE_SECONDS)
    elif status == JobStatus.WAITING:
        wake = Job.objects.filter(pk=job_id).values_list("wake_at", flat=True).first()
        if wake is not None:
            countdown = max(0.0, (wake - datetime.now(UTC)).total_seconds())
            run_job.apply_async((job_id,), {"due": wake.isoformat()}, countdown=countdown)
    return status


@shared_task(name="dlq.jobtasks.resume_jobs", ignore_result=True)
def resume_jobs() -> int:
    """Beat: restart jobs whose worker died or whose start message was lost, and release
    single replays whose process died mid-publish (message_actions.release_stale_replays)."""
    stale = datetime.now(UTC) - timedelta(seconds=settings.DLQ_JOB_STALE_SECONDS)
    # A running job is resumed even when cancelled: its dead worker may have left messages
    # `replaying`, and resuming settles them before the job ends as cancelled.
    # A waiting job is resumed when its turn is overdue: the task that carried it was lost.
    stopped = Q(status=JobStatus.RUNNING) | Q(status=JobStatus.PENDING, cancel_requested=False)
    stopped &= ~Q(heartbeat_at__gte=stale) & ~Q(status=JobStatus.PENDING, created_at__gte=stale)
    overdue = Q(status=JobStatus.WAITING, wake_at__lt=stale)
    job_ids = list(Job.objects.filter(stopped | overdue).values_list("id", flat=True))
    for job_id in job_ids:
        run_job.delay(job_id)
    message_actions.release_stale_replays()
    return len(job_ids)


def start(job: Job) -> None:
    """Queue a new job for a worker (called after the creating transaction commits)."""
    run_job.delay(job.pk)


def resume(job: Job) -> None:
    """Queue a resumed job's next turn, carrying its time (called after the resume commits)."""
    run_job.delay(job.pk, job.wake_at.isoformat())
