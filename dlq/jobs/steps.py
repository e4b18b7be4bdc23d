"""A replay job in steps: a canary, then `ramp` times as many as the step before, each step
watched for returns, each gated on consumers (contract.md, "Safe bulk replay").

A job without a canary is one step of everything. Between steps the job is `waiting`, and
no worker holds it: each turn (running.run_job) looks once (returns, consumers), then the
job is left `waiting` with its next turn's time (`wake_at`) and the task that carries that
time takes the next turn (dlq/tasks/jobs.py). A waiting job holds no broker connection: a
step's publishers are closed when its last batch is settled.

What a step publishes is a count of the job's items, in id order: step k ends at
step_end(job, k) items claimed in all. The step in progress is kept on the job (`step`),
so a resumed job whose worker died mid-step finishes that step (what was left
`publishing` first, with the same replay ids: running.py), and one that died while
watching goes on watching until `watch_until`. Nothing confirmed is published again.
"""

import math
from datetime import UTC, datetime, timedelta

from django.db.models import Count, Q

from dlq.jobs import gate, returns
from dlq.jobs.batches import cancel_requested
from dlq.models.actions import ItemState, Job, JobStatus

WATCH_EVERY = 1.0  # seconds between two counts of returns while a step is watched
GATE_EVERY = 3.0  # seconds between two looks at the consumers
STEP_OVER = "step over"  # what running._run_replay answers when a step ends with more to do


def step_end(job: Job, step: int) -> int:
    """How many of the job's items are claimed once step `step` is over."""
    if not job.canary:
        return job.total
    end, size = 0, job.canary
    for _ in range(step):
        end += size
        if end >= job.total:
            return job.total
        size = max(size + 1, math.ceil(size * job.ramp))
    return end


def per_step(job: Job) -> list[dict]:
    """Each step begun so far: its number, its planned size, how many it published
    (confirmed), how many failed, and how many of those published came back (the job
    page's chart). Items carry the step that claimed them (JobItem.step)."""
    counts = {
        row["step"]: row
        for row in job.items.filter(step__isnull=False)
        .values("step")
        .annotate(
            published=Count("id", filter=Q(state=ItemState.DONE)),
            failed=Count("id", filter=Q(state=ItemState.FAILED)),
        )
    }
    back = returns.by_step(job)  # also those stored after the job ended
    return [
        {"step": k, "size": step_end(job, k) - step_end(job, k - 1),
         "published": counts.get(k, {}).get("published", 0),
         "failed": counts.get(k, {}).get("failed", 0), "returned": back.get(k, 0)}
        for k in range(1, job.step + 1)
    ]  # fmt: skip


def turn(job: Job, replay_step, finish) -> str:
    """One turn: go on with the step in progress, or watch the last one, or open the next
    one when its consumers are there. `replay_step()` publishes until the step's end
    (running._replay_on_nodes); `finish(job, status, detail)` ends the job."""
    while True:
        job.refresh_from_db(fields=["done", "failed", "returned"])
        counts = _items(job)
        if cancel_requested(job) and not counts["publishing"]:
            return finish(job, JobStatus.CANCELLED, "")
        why = returns.exceeded(job)
        if why and not counts["publishing"]:
            return finish(job, JobStatus.ABORTED, why)
        claimed = job.total - counts["pending"]
        if counts["publishing"] or (job.step and claimed < step_end(job, job.step)):
            outcome = _publish(job, claimed, replay_step)
        elif not counts["pending"]:
            return finish(job, JobStatus.DONE, "")
        elif job.watch_until and (left := _left(job.watch_until)) > 0:
            return wait(job, _watching(job, left), min(WATCH_EVERY, left))
        elif job.require_consumers and (
            closed := gate.closed(job, step_end(job, job.step + 1) - claimed)
        ):
            return wait(job, closed, GATE_EVERY)
        else:
            job.step += 1
            Job.objects.filter(pk=job.pk).update(step=job.step, watch_until=None)
            outcome = _publish(job, claimed, replay_step)
        if outcome != STEP_OVER:
            return outcome
        job.watch_until = datetime.now(UTC) + timedelta(seconds=job.watch_seconds)
        Job.objects.filter(pk=job.pk).update(watch_until=job.watch_until)


def _items(job: Job) -> dict[str, int]:
    """The job's pending and publishing items (the jobitem_state index)."""
    return job.items.aggregate(
        pending=Count("id", filter=Q(state=ItemState.PENDING)),
        publishing=Count("id", filter=Q(state=ItemState.PUBLISHING)),
    )


def _publish(job: Job, claimed: int, replay_step) -> str:
    """Run the step in progress to its end (or the job's): running again, on a worker."""
    going = Job.objects.filter(
        pk=job.pk, status__in=(JobStatus.RUNNING, JobStatus.WAITING)
    ).update(status=JobStatus.RUNNING, heartbeat_at=datetime.now(UTC), wake_at=None,
             status_detail="")  # fmt: skip
    if not going:  # cancelled while it waited
        return Job.objects.filter(pk=job.pk).values_list("status", flat=True).first()
    job.step_end, job.claimed = step_end(job, job.step), claimed
    return replay_step()


def wait(job: Job, detail: str, seconds: float) -> str:
    """Leave the job waiting, saying why; its next turn is in `seconds`."""
    wake = datetime.now(UTC) + timedelta(seconds=seconds)
    left = Job.objects.filter(
        pk=job.pk, status__in=(JobStatus.RUNNING, JobStatus.WAITING), cancel_requested=False
    ).update(status=JobStatus.WAITING, status_detail=detail, wake_at=wake)
    if not left:
        return Job.objects.filter(pk=job.pk).values_list("status", flat=True).first()
    return JobStatus.WAITING


def _left(until: datetime) -> float:
    return (until - datetime.now(UTC)).total_seconds()


def _watching(job: Job, left: float) -> str:
    back = f"{job.returned} came back so far" if job.returned else "none came back so far"
    return (
        f"watching step {job.step} for {job.watch_seconds} s ({math.ceil(left)} s left):"
        f" {job.done} published, {back}"
    )
