"""Celery entry points for bulk jobs: thin wrappers over dlq/actions/job_run.py."""

from datetime import UTC, datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Q

from dlq.actions import job_run
from dlq.actions import message as message_actions
from dlq.models.actions import Job, JobStatus


@shared_task(
    name="dlq.jobtasks.run_job", acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def run_job(job_id: int) -> str:
    # acks_late + reject_on_worker_lost: a worker killed mid-job returns the task to the
    # queue; the next worker resumes once the job's heartbeat is stale (job_run.claim_job).
    status = job_run.run_job(job_id)
    if status in ("busy", "interrupted"):
        run_job.apply_async((job_id,), countdown=settings.DLQ_JOB_STALE_SECONDS)
    return status


@shared_task(name="dlq.jobtasks.resume_jobs", ignore_result=True)
def resume_jobs() -> int:
    """Beat: restart jobs whose worker died or whose start message was lost, and release
    single replays whose process died mid-publish (message_actions.release_stale_replays)."""
    stale = datetime.now(UTC) - timedelta(seconds=settings.DLQ_JOB_STALE_SECONDS)
    # A running job is resumed even when cancelled: its dead worker may have left messages
    # `replaying`, and resuming settles them before the job ends as cancelled.
    job_ids = list(
        Job.objects.filter(
            Q(status=JobStatus.RUNNING) | Q(status=JobStatus.PENDING, cancel_requested=False)
        )
        .exclude(heartbeat_at__gte=stale)
        .exclude(status=JobStatus.PENDING, created_at__gte=stale)
        .values_list("id", flat=True)
    )
    for job_id in job_ids:
        run_job.delay(job_id)
    message_actions.release_stale_replays()
    return len(job_ids)


def start(job: Job) -> None:
    """Queue a new job for a worker (called after the creating transaction commits)."""
    run_job.delay(job.pk)
