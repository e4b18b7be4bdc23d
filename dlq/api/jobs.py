"""/api/v1/jobs: bulk replay and discard (dlq/actions/jobs.py), run by a Celery worker."""

from django.db import transaction
from django.http import Http404
from ninja import Router, Status

from dlq.accounts.roles import OPERATOR
from dlq.actions import jobs
from dlq.api.base import ACTION_ERRORS, ERRORS, needs
from dlq.http import request_id
from dlq.models.actions import Job
from dlq.schemas.actions import target_value
from dlq.schemas.errors import ErrorOut
from dlq.schemas.jobs import JobIn, JobOut
from dlq.tasks import jobs as job_tasks

router = Router()


@router.post("", response={202: JobOut, **ERRORS}, auth=needs(OPERATOR))
def create_job(request, payload: JobIn):
    """A bulk replay or discard (operator) of `ids` or of the messages a `filter` selects
    (frozen now: parked messages received up to this instant). Answers 202 with the job; a
    worker runs it. Poll GET /jobs/{id} for progress."""
    job = jobs.create_job(
        request.auth,
        payload.action,
        ids=payload.ids,
        filters=payload.filter.given() if payload.filter is not None else None,
        target=target_value(payload.target),
        rate_per_s=payload.rate_per_s,
        reason=payload.reason,
        request_id=request_id(request),
    )
    transaction.on_commit(lambda: job_tasks.start(job))
    return Status(202, job)


@router.get("/{id}", response={200: JobOut, 404: ErrorOut, **ERRORS})
def get_job(request, id: int):
    """A job's status and progress: done, failed, and a count per outcome."""
    job = Job.objects.filter(pk=id).first()
    if job is None:
        raise Http404(f"no job {id}")
    return job


@router.post("/{id}/cancel", response={200: JobOut, **ACTION_ERRORS}, auth=needs(OPERATOR))
def cancel_job(request, id: int):
    """Stop a job (operator); what was done stays done. A pending job is cancelled at once,
    a running one when its current batch is settled. 409 when it has already finished."""
    return jobs.cancel_job(id, request.auth, request_id(request))
