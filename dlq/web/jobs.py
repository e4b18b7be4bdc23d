"""Bulk jobs: the list (running first), a job's page with live progress, cancel."""

from urllib.parse import urlencode

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import OPERATOR, VIEWER
from dlq.actions import jobs
from dlq.actions.errors import ActionError
from dlq.http import request_id
from dlq.messages import queries
from dlq.models.actions import Job
from dlq.web.access import role_view

PAGE = 50


@require_safe
@role_view(VIEWER)
def job_list(request):
    """Active jobs, then finished ones newest first, keyset-paginated by id."""
    cursor = request.GET.get("cursor") or None
    if cursor and queries.decode_cursor(cursor) is None:
        errors = {"cursor": ["not a cursor this page gave out"]}
        return render(request, "jobs/list.html", {"errors": errors}, status=400)
    finished, next_cursor = queries.keyset(jobs.finished_jobs(), cursor, PAGE)
    active = [] if cursor else jobs.active_jobs()
    context = {"active": active, "finished": finished, "paged": bool(cursor),
               "next_query": urlencode({"cursor": next_cursor}) if next_cursor else ""}  # fmt: skip
    return render(request, "jobs/list.html", context)


def _progress(job: Job) -> dict:
    settled = job.done + job.failed
    return {
        "job": job,
        "custom_target": job.target if isinstance(job.target, dict) else None,
        "failures": jobs.failures_by_error(job),
        "settled": settled,
        "percent": round(100 * settled / job.total) if job.total else 100,
        "bar": _bar(job),
        "active": job.status in jobs.ACTIVE_JOBS,
        "outcomes": sorted(job.outcomes.items()),
    }


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
        jobs.cancel_job(job.pk, request.user, request_id(request))
    except ActionError as e:
        messages.error(request, "; ".join(p for ps in e.errors.values() for p in ps))
    else:
        messages.success(request, f"Job {job.pk}: cancel requested.")
    return redirect("jobs:detail", job.pk)
