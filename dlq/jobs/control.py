"""Bulk replay and discard: creating a job, cancelling it, and reading jobs for the pages.

Creating a job writes one JobItem per selected message (a filter is frozen at that instant:
only messages received up to it). Running it is dlq/jobs/running.py.
"""

import json
from datetime import UTC, datetime

from django.db import connection, transaction
from django.db.models import Count, Min, OuterRef, Subquery, TextField, Value
from django.db.models.functions import Coalesce, NullIf

from dlq import audit
from dlq.actions import replay, routes
from dlq.actions.errors import ActionError, Conflict, NotFound
from dlq.messages.queries import filter_messages
from dlq.models import Message, Status
from dlq.models.actions import AuditAction, ItemState, Job, JobItem, JobStatus, Replay

ACTIONS = ("replay", "discard")
MAX_IDS = 100_000
MAX_ROUTES = 50  # distinct routes of a selection asked about for drained queues


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


SAFETY = ("canary", "ramp", "watch_seconds", "max_returns", "require_consumers")


def safety(target, given: dict) -> dict:
    """A replay's safe-replay fields, the contract's defaults filled in for those not
    `given`: no canary, a ramp of 2, 30 s of watching; max_returns 0 with a canary (else
    no limit); consumers required unless the target is custom."""
    canary = given.get("canary")
    return {
        "canary": canary,
        "ramp": given.get("ramp", 2.0),
        "watch_seconds": given.get("watch_seconds", 30),
        "max_returns": given.get("max_returns", 0 if canary is not None else None),
        "require_consumers": given.get("require_consumers", target in replay.TARGETS),
    }


def _safety_errors(action, canary, ramp, watch_seconds, max_returns, require_consumers) -> dict:
    errors = {}
    if action != "replay" and (canary is not None or max_returns is not None or require_consumers):
        errors["action"] = ["a canary, returns and the consumer gate are for a replay"]
    if canary is not None and (type(canary) is not int or canary < 1):
        errors["canary"] = ["a whole number, at least 1, or null"]
    if isinstance(ramp, bool) or not isinstance(ramp, int | float) or not 1 < ramp <= 1000:
        errors["ramp"] = ["more than 1 (each step that many times the one before), at most 1000"]
    if type(watch_seconds) is not int or not 0 <= watch_seconds <= 86_400:
        errors["watch_seconds"] = ["whole seconds from 0 to 86400"]
    if max_returns is not None and (type(max_returns) is not int or max_returns < 0):
        errors["max_returns"] = ["a whole number, at least 0, or null (no limit)"]
    if type(require_consumers) is not bool:
        errors["require_consumers"] = ["true or false"]
    return errors


def _validate(action, ids, filters, target, rate_per_s, reason, safe) -> None:
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
    errors.update(_safety_errors(action, **safe))
    if errors:
        raise ActionError(errors)
    if action == "replay":
        _check_target(target)


def create_job(actor, action: str, *, ids=None, filters=None, target="original",
               rate_per_s=None, reason="", request_id="", allow_drained=False,
               canary=None, ramp=2.0, watch_seconds=30, max_returns=None,
               require_consumers=False, retry_of=None) -> Job:  # fmt: skip
    """Freeze the selection and write the job; the caller starts it (tasks.run_job). A
    replay whose routes reach a queue the console drains is refused unless `allow_drained`.
    The safe-replay fields are as given (a plain job by default); the API and the pages
    fill in the contract's defaults first (safety()). `retry_of`: the job whose failed
    messages this one replays again (retry_failed), kept in the audit row."""
    safe = {"canary": canary, "ramp": ramp, "watch_seconds": watch_seconds,
            "max_returns": max_returns, "require_consumers": require_consumers}  # fmt: skip
    _validate(action, ids, filters, target, rate_per_s, reason, safe)
    frozen_at = datetime.now(UTC)
    selection = (
        Message.objects.filter(pk__in=ids)
        if ids is not None
        else filter_messages(filters).filter(received_at__lte=frozen_at, status=Status.PARKED)
    )
    _check_selects_something(selection, "ids" if ids is not None else "filter")
    drained = _drained_routes(selection, target, allow_drained) if action == "replay" else []
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
            returns_after=Message.objects.order_by("-id").values_list("id", flat=True).first() or 0,
            **safe,
        )
        job.total = _add_items(job, selection)
        job.save(update_fields=["total"])
        detail = _job_detail(job, ids)
        if drained:
            detail["allow_drained"] = drained
        if retry_of is not None:
            detail["retry_of"] = retry_of  # the job whose failed messages these are
        audit.record(actor, AuditAction.JOB_CREATE, job.reason, job_id=job.pk,
                     request_id=request_id, detail=detail)  # fmt: skip
    return job


def _check_selects_something(selection, field: str) -> None:
    """A job with no parked message would do nothing (the bulk review refuses it too)."""
    if not selection.filter(status=Status.PARKED).exists():
        raise ActionError({field: ["no parked message is selected: nothing to do"]})


# What decides where "original", "failed_queue" and a custom target send a message.
ROUTE_FIELDS = {"original": ("vhost", "queue", "original_exchange", "original_routing_keys_json"),
                "failed_queue": ("vhost", "failed_queue")}  # fmt: skip


def _drained_routes(selection, target, allow: bool) -> list[str]:
    """The queues the console drains that the job's replays would reach: each distinct
    route of the selection previewed once (on its first message's headers), at most
    MAX_ROUTES of them; refused unless `allow` (routes.refuse_drained)."""
    fields = ROUTE_FIELDS.get(target, ("vhost",)) if isinstance(target, str) else ("vhost",)
    firsts = (
        selection.filter(status=Status.PARKED).order_by().values(*fields)
        .annotate(first=Min("id")).values_list("first", flat=True)[:MAX_ROUTES]
    )  # fmt: skip
    overrides, reached = replay.load_overrides(), set()
    for message in Message.objects.defer("body", "search_text").filter(pk__in=list(firsts)):
        try:
            route = replay.resolve(message, target, overrides)
        except replay.ReplayError:
            continue  # the job records it per message, as before
        headers = routes.headers_of(message)
        found = routes.preview(message.vhost, route, headers)
        reached |= {(message.vhost, queue) for queue in found["drained"]}
    return routes.refuse_drained(reached, allow)


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
# uuid4().hex), so claiming a batch writes only the items' state (batches.py). Elsewhere
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
        **({name: getattr(job, name) for name in SAFETY} if job.action == "replay" else {}),
    }


def cancel_job(job_id: int, actor, request_id: str = "") -> Job:
    """Stop a job; what was done stays done. The contract: cancel works in every state but
    `done` (409). A job already stopped (cancelled, aborted, failed) is answered as it is,
    unchanged and not audited again: a second click, or two operators at once, is no error."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"job {job_id} does not exist")
        if job.status == JobStatus.DONE:
            raise Conflict(f"job {job_id} is done; it cannot be cancelled")
        if job.status in FINISHED:
            return job
        job.cancel_requested = True
        # A waiting job has nothing in flight (a step's batches are settled before it
        # waits) and no worker: it ends now; a turn looking at it meanwhile stops there.
        if job.status in (JobStatus.PENDING, JobStatus.WAITING):
            job.status, job.finished_at = JobStatus.CANCELLED, datetime.now(UTC)
        job.save(update_fields=["cancel_requested", "status", "finished_at"])
        audit.record(actor, AuditAction.JOB_CANCEL, "", job_id=job.pk, request_id=request_id)
    return job


def resume_job(job_id: int, actor, request_id: str = "") -> Job:
    """Resume a job paused after identical errors (running._pause): its next turn is due now,
    taken by the task the caller queues with that time (tasks.resume) or, were that task
    lost, by beat once it is overdue. 409 for a job that is not paused."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"job {job_id} does not exist")
        if not job.paused or job.cancel_requested:
            raise Conflict(f"job {job_id} is {job.status}, not paused; only a paused job resumes")
        paused_by = job.status_detail
        job.wake_at, job.status_detail = datetime.now(UTC), "resumed by the operator"
        job.save(update_fields=["wake_at", "status_detail"])
        audit.record(actor, AuditAction.JOB_RESUME, "", job_id=job.pk, request_id=request_id,
                     detail={"paused": paused_by})  # fmt: skip
    return job


def retry_failed(
    job_id: int, actor, reason: str, request_id: str = "", allow_drained: bool = False
) -> Job:
    """A new replay job of exactly the messages that failed in job `job_id` (their replay
    put them back to `parked`), to the same target, at the same rate and with the same
    safe-replay settings; the caller starts it. For a finished job or a paused one (409
    otherwise, or when nothing failed).

    The new job's items get new replay ids (drawn at its freeze, as for any job). The bulk
    rules publish again with the *same* id only what a job left `publishing`, whose fate is
    unknown, within that job. A failed item was settled: the broker's answer is recorded on
    its Replay row (refused, returned, or cut off and said so), and the operator decided to
    replay it again, as one replays a parked message by hand: a new replay, its own id.
    A route into a queue the console drains needs `allow_drained` again: whoever retries
    decides that loop anew, as the first job's creator did."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"job {job_id} does not exist")
    if job.action != "replay" or not (job.status in FINISHED or job.paused):
        raise Conflict(f"job {job_id} is a {job.status} {job.action}: only a finished or"
                       " paused replay's failed messages are retried")  # fmt: skip
    failed = job.items.filter(state=ItemState.FAILED).order_by("message_id")
    ids = list(failed.values_list("message_id", flat=True)[: MAX_IDS + 1])
    if not ids:
        raise Conflict(f"job {job_id} has no failed messages")
    safety = {name: getattr(job, name) for name in SAFETY}
    return create_job(actor, "replay", ids=ids, target=job.target, rate_per_s=job.rate_per_s,
                      reason=reason, request_id=request_id, retry_of=job.pk,
                      allow_drained=allow_drained, **safety)  # fmt: skip


# --- reading jobs ---------------------------------------------------------------------------


ACTIVE_JOBS = (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.WAITING)
FINISHED = (JobStatus.DONE, JobStatus.CANCELLED, JobStatus.FAILED, JobStatus.ABORTED)


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
