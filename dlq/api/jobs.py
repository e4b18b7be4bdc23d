"""/api/v1/jobs: bulk replay and discard (dlq/jobs/control.py), run by a Celery worker."""

from django.db import transaction
from django.http import Http404
from ninja import Router, Status

from dlq.accounts.roles import OPERATOR
from dlq.api.base import ACTION_ERRORS, ERRORS, needs
from dlq.http import request_id
from dlq.jobs import control
from dlq.models.actions import Job
from dlq.schemas.actions import target_value
from dlq.schemas.errors import ErrorOut
from dlq.schemas.jobs import JobIn, JobOut, RetryIn
from dlq.tasks import jobs as job_tasks

router = Router()


@router.post("", response={202: JobOut, **ERRORS}, auth=needs(OPERATOR))
def create_job(request, payload: JobIn):
    """A bulk replay or discard (operator) of `ids` or of the messages a `filter` selects
    (frozen now: parked messages received up to this instant). Answers 202 with the job; a
    worker runs it. Poll GET /jobs/{id} for progress. A replay may be safe: a `canary`
    first, then `ramp` times as many per step, each watched for `watch_seconds`; more than
    `max_returns` come back and it is `aborted`; `require_consumers` gates each step."""
    target = target_value(payload.target)
    job = control.create_job(
        request.auth,
        payload.action,
        ids=payload.ids,
        filters=payload.filter.given() if payload.filter is not None else None,
        target=target,
        rate_per_s=payload.rate_per_s,
        reason=payload.reason,
        request_id=request_id(request),
        allow_drained=payload.allow_drained,
        **payload.safety(target),
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
    """Stop a job (operator); what was done stays done. A pending or waiting job is
    cancelled at once, a running one when its current batch is settled. A job already
    stopped (cancelled, aborted, failed) is answered unchanged; 409 for a done one."""
    return control.cancel_job(id, request.auth, request_id(request))


@router.post("/{id}/resume", response={200: JobOut, **ACTION_ERRORS}, auth=needs(OPERATOR))
def resume_job(request, id: int):
    """Resume a job paused after a run of identical broker errors (operator; `paused`, its
    status_detail names the error): it goes on from where it stopped. 409 when it is not
    paused."""
    job = control.resume_job(id, request.auth, request_id(request))
    transaction.on_commit(lambda: job_tasks.resume(job))
    return job


@router.post("/{id}/retry-failed", response={202: JobOut, **ACTION_ERRORS}, auth=needs(OPERATOR))
def retry_failed(request, id: int, payload: RetryIn):
    """A new replay job of exactly the messages that failed in this one (operator), to the
    same target with the same settings and new replay ids; answers 202 with the new job. 409
    while the job still runs (a paused one is fine) or when nothing failed; 400 on `target`
    when the route reaches a queue the console drains, unless `allow_drained`."""
    job = control.retry_failed(
        id, request.auth, payload.reason, request_id(request), allow_drained=payload.allow_drained
    )
    transaction.on_commit(lambda: job_tasks.start(job))
    return Status(202, job)
