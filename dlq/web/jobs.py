"""Bulk jobs: the list (running first), a job's page with live progress, cancel, resume
a paused job, retry the failed messages of one."""

import json
from urllib.parse import urlencode

from django.contrib import messages
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import OPERATOR, VIEWER
from dlq.actions.errors import ActionError, DrainedRoute
from dlq.http import request_id
from dlq.jobs import control, steps
from dlq.messages import queries
from dlq.messages.selections import of_job
from dlq.models.actions import ItemState, Job
from dlq.tasks import jobs as job_tasks
from dlq.web import charts
from dlq.web.access import role_view
from dlq.web.forms.replay import TARGETS

PAGE = 50


@require_safe
@role_view(VIEWER)
def job_list(request):
    """Active jobs, then finished ones newest first, keyset-paginated by id."""
    cursor = request.GET.get("cursor") or None
    if cursor and queries.decode_cursor(cursor) is None:
        errors = {"cursor": ["not a cursor this page gave out"]}
        return render(request, "jobs/list.html", {"errors": errors}, status=400)
    finished, next_cursor = queries.keyset(control.finished_jobs(), cursor, PAGE)
    active = [] if cursor else control.active_jobs()
    context = {"active": active, "finished": finished, "paged": bool(cursor),
               "next_query": urlencode({"cursor": next_cursor}) if next_cursor else ""}  # fmt: skip
    return render(request, "jobs/list.html", context)


def _progress(job: Job) -> dict:
    settled = job.done + job.failed
    return {
        "job": job,
        "custom_target": job.target if isinstance(job.target, dict) else None,
        "target_label": dict(TARGETS).get(job.target, "") if isinstance(job.target, str) else "",
        "failures": control.failures_by_error(job),
        "settled": settled,
        "percent": round(100 * settled / job.total) if job.total else 100,
        "bar": _bar(job),
        "active": job.status in control.ACTIVE_JOBS,
        "outcomes": sorted(job.outcomes.items()),
        "in_words": of_job(json.loads(job.filter_json) if job.filter_json else None, job.total),
        "steps_chart": _steps_chart(job),
        "retryable": _retryable(job),
    }


def _steps_chart(job: Job):
    """The per-step chart of a replay in steps (a canary, or more than one step)."""
    if job.action != "replay" or not (job.canary or job.step > 1):
        return None
    return charts.steps_chart(steps.per_step(job))


def _retryable(job: Job) -> int:
    """How many failed messages the page offers to retry: a finished or paused replay's."""
    if job.action != "replay" or not (job.status in control.FINISHED or job.paused):
        return 0
    return job.items.filter(state=ItemState.FAILED).count()


def _bar(job: Job) -> dict:
    """The widths (of 100) of the done and the failed parts of the progress bar."""
    total = job.total or 1
    done, failed = 100 * job.done / total, 100 * job.failed / total
    return {"done": f"{done:.2f}", "failed": f"{failed:.2f}"}


@require_safe
@role_view(VIEWER)
def job_detail(request, pk):
    """The job; with htmx, only its progress fragment (polled while the job is active)."""
    job = get_object_or_404(Job, pk=pk)
    template = "jobs/detail.html" + ("#progress" if request.htmx else "")
    return render(request, template, _progress(job))


@require_POST
@role_view(OPERATOR)
def job_cancel(request, pk):
    job = get_object_or_404(Job, pk=pk)
    try:
        stopped = job.status in control.FINISHED
        job = control.cancel_job(job.pk, request.user, request_id(request))
    except ActionError as e:
        messages.error(request, "; ".join(p for ps in e.errors.values() for p in ps))
    else:
        messages.success(request, f"Job {job.pk} is {job.status} already: nothing to stop."
                         if stopped else f"Job {job.pk}: cancel requested.")  # fmt: skip
    return redirect("jobs:detail", job.pk)


@require_POST
@role_view(OPERATOR)
def job_resume(request, pk):
    job = get_object_or_404(Job, pk=pk)
    try:
        job = control.resume_job(job.pk, request.user, request_id(request))
    except ActionError as e:
        messages.error(request, "; ".join(p for ps in e.errors.values() for p in ps))
    else:
        transaction.on_commit(lambda: job_tasks.resume(job))
        messages.success(request, f"Job {job.pk} resumed.")
    return redirect("jobs:detail", job.pk)


@require_POST
@role_view(OPERATOR)
def job_retry_failed(request, pk):
    """A new job of the failed messages, with the reason given (the page again, 400, without
    one)."""
    job = get_object_or_404(Job, pk=pk)
    allow = request.POST.get("allow_drained") == "on"
    try:
        retry = control.retry_failed(job.pk, request.user, request.POST.get("reason", ""),
                                     request_id(request), allow_drained=allow)  # fmt: skip
    except ActionError as e:
        problems = [p for ps in e.errors.values() for p in ps]
        context = {**_progress(job), "retry_errors": problems,
                   "retry_reason": request.POST.get("reason", ""),
                   "retry_drained": isinstance(e, DrainedRoute)}  # fmt: skip
        return render(request, "jobs/detail.html", context, status=e.status)
    transaction.on_commit(lambda: job_tasks.start(retry))
    messages.success(request, f"Job {retry.pk} created: a replay of the {retry.total} failed"
                              f" messages of job {job.pk}.")  # fmt: skip
    return redirect("jobs:detail", retry.pk)
