"""Bulk replay and discard: creating a job, cancelling it, and reading jobs for the pages.

Creating a job writes one JobItem per selected message (a filter is frozen at that instant:
only messages received up to it). Running it is dlq/actions/job_run.py.
"""

import json
from datetime import UTC, datetime

from django.db import connection, transaction
from django.db.models import Count, OuterRef, Subquery, TextField, Value
from django.db.models.functions import Coalesce, NullIf

from dlq import audit
from dlq.actions import replay
from dlq.actions.errors import ActionError, Conflict, NotFound
from dlq.messages.queries import filter_messages
from dlq.models import Message, Status
from dlq.models.actions import AuditAction, ItemState, Job, JobItem, JobStatus, Replay

ACTIONS = ("replay", "discard")
MAX_IDS = 100_000


# --- creating a job -----------------------------------------------------------------------


def _check_target(target) -> None:
    if target in replay.TARGETS:
        return
    if isinstance(target, dict):
        try:
            replay.resolve(None, target)
            return
        except replay.ReplayError as e:
            raise ActionError({"target": [str(e)]}) from None
    raise ActionError({"target": ['must be "original", "failed_queue" or an exchange and key']})


def _validate(action, ids, filters, target, rate_per_s, reason) -> None:
    errors = {}
    if action not in ACTIONS:
        errors["action"] = [f"must be one of {', '.join(ACTIONS)}"]
    if (ids is None) == (filters is None):
        errors["ids"] = ["give either ids or filter"]
    elif ids is not None and (not isinstance(ids, list | tuple) or not 0 < len(ids) <= MAX_IDS):
        errors["ids"] = [f"give a list of 1 to {MAX_IDS} ids"]
    elif ids is not None and not all(type(i) is int for i in ids):
        errors["ids"] = ["ids are whole numbers"]
    elif filters is not None and not isinstance(filters, dict):
        errors["filter"] = ["must be an object with the message list's filters"]
    if rate_per_s is not None and not 1 <= rate_per_s <= 100_000:
        errors["rate_per_s"] = ["must be between 1 and 100000, or null"]
    if not isinstance(reason, str) or not reason.strip():
        errors["reason"] = ["a reason is required"]
    if errors:
        raise ActionError(errors)
    if action == "replay":
        _check_target(target)


def create_job(actor, action: str, *, ids=None, filters=None, target="original",
               rate_per_s=None, reason="", request_id="") -> Job:  # fmt: skip
    """Freeze the selection and write the job; the caller starts it (tasks.run_job)."""
    _validate(action, ids, filters, target, rate_per_s, reason)
    frozen_at = datetime.now(UTC)
    selection = (
        Message.objects.filter(pk__in=ids)
        if ids is not None
        else filter_messages(filters).filter(received_at__lte=frozen_at, status=Status.PARKED)
    )
    _check_selects_something(selection, "ids" if ids is not None else "filter")
    who = audit.actor_fields(actor)
    with transaction.atomic():
        job = Job.objects.create(
            action=action,
            target_json=json.dumps(target if action == "replay" else None),
            rate_per_s=rate_per_s,
            reason=reason.strip(),
            filter_json=json.dumps(filters, default=str) if filters is not None else "",
            created_by=who["actor_name"],
            created_by_id=who["actor_id"],
            created_at=frozen_at,
        )
        job.total = _add_items(job, selection)
        job.save(update_fields=["total"])
        audit.record(actor, AuditAction.JOB_CREATE, job.reason, job_id=job.pk,
                     request_id=request_id, detail=_job_detail(job, ids))  # fmt: skip
    return job


def _check_selects_something(selection, field: str) -> None:
    """A job with no parked message would do nothing (the bulk review refuses it too)."""
    if not selection.filter(status=Status.PARKED).exists():
        raise ActionError({field: ["no parked message is selected: nothing to do"]})


def _add_items(job: Job, selection) -> int:
    """The job's items, one per selected message in id order, in one INSERT ... SELECT
    (fetching the ids and inserting them back took most of a second at 20,000)."""
    q = connection.ops.quote_name
    sql, params = selection.order_by().values("id").query.sql_with_params()
    replay_id = NEW_REPLAY_ID.get(connection.vendor, "''") if job.action == "replay" else "''"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {q(JobItem._meta.db_table)} (job_id, message_id, state, outcome,"
            f" replay_id, detail) SELECT %s, s.id, %s, '', {replay_id}, '' FROM ({sql}) s"
            " ORDER BY s.id",
            [job.pk, ItemState.PENDING.value, *params],
        )
        return max(cursor.rowcount, 0)


# Each item's replay id, drawn when the selection is frozen (32 random hex digits, like
# uuid4().hex), so claiming a batch writes only the items' state (job_batch.py). Elsewhere
# the claim draws them.
NEW_REPLAY_ID = {
    "postgresql": "replace(gen_random_uuid()::text, '-', '')",
    "sqlite": "lower(hex(randomblob(16)))",
}


def _job_detail(job: Job, ids) -> dict:
    return {
        "action": job.action,
        "target": job.target,
        "total": job.total,
        "filter": json.loads(job.filter_json) if job.filter_json else None,
        "ids": len(ids) if ids is not None else None,
        "rate_per_s": job.rate_per_s,
    }


def cancel_job(job_id: int, actor, request_id: str = "") -> Job:
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"job {job_id} does not exist")
        if job.status in (JobStatus.DONE, JobStatus.CANCELLED, JobStatus.FAILED):
            raise Conflict(f"job {job_id} is {job.status}; it cannot be cancelled")
        job.cancel_requested = True
        if job.status == JobStatus.PENDING:
            job.status, job.finished_at = JobStatus.CANCELLED, datetime.now(UTC)
        job.save(update_fields=["cancel_requested", "status", "finished_at"])
        audit.record(actor, AuditAction.JOB_CANCEL, "", job_id=job.pk, request_id=request_id)
    return job


# --- reading jobs ---------------------------------------------------------------------------


ACTIVE_JOBS = (JobStatus.PENDING, JobStatus.RUNNING)


def active_jobs() -> list[Job]:
    return list(Job.objects.filter(status__in=ACTIVE_JOBS).order_by("-id"))


def finished_jobs():
    return Job.objects.exclude(status__in=ACTIVE_JOBS).order_by("-id")


def failures_by_error(job: Job, groups: int = 20, links: int = 5) -> list[dict]:
    """The job's failed items grouped by why they failed (the outcome and the broker's answer,
    or why the message could not be published), the largest group first: each with its
    count and the first few messages. Jobs of 0.5 and before kept only the broker's answer,
    on the replay row."""
    failed = _explained(JobItem.objects.filter(job=job, state=ItemState.FAILED))
    rows = list(
        failed.values("outcome", "error")
        .annotate(count=Count("id"))
        .order_by("-count", "outcome", "error")[:groups]
    )
    for row in rows:
        same = failed.filter(outcome=row["outcome"], error=row["error"]).order_by("message_id")
        row["message_ids"] = list(same.values_list("message_id", flat=True)[:links])
    return rows


def _explained(items):
    broker_said = (
        Replay.objects.filter(job=OuterRef("job"), message=OuterRef("message"))
        .exclude(outcome="confirmed")
        .order_by("id")
        .values("detail")[:1]
    )
    return items.annotate(
        error=Coalesce(
            NullIf("detail", Value("")), Subquery(broker_said), Value(""), output_field=TextField()
        )
    )
