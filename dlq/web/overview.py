"""The overview page: whether anyone gets paged, queues, arrivals, drainers, running jobs and
recent actions."""

from datetime import timedelta

from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from dlq import audit
from dlq.accounts.roles import VIEWER
from dlq.alerts import channels
from dlq.groups import summary
from dlq.health import drained, drainers
from dlq.health.queues import queue_overview
from dlq.jobs import control
from dlq.messages.arrivals import arrivals_by_queue, hourly_arrivals
from dlq.web import charts
from dlq.web.access import role_view


def _queues_with_arrivals(now) -> list[dict]:
    arrivals = arrivals_by_queue(now)
    queues = queue_overview()
    for queue in queues:
        queue["arrivals"] = arrivals.get((queue["vhost"], queue["name"]), {"hour": 0, "day": 0})
    return queues


@require_safe
@role_view(VIEWER)
def overview(request):
    now = timezone.now()
    buckets, series = hourly_arrivals(now)
    context = {
        "queues": _queues_with_arrivals(now),
        "chart": charts.arrivals_chart(buckets, series),
        "groups": summary.failure_groups(now - timedelta(days=1), limit=5),
        "jobs": control.active_jobs(),
        "audit": audit.recent_audit(),
        "paging": channels.paging(),
        **drainers.overview_context(now),
        **drained.context(),
    }
    return render(request, "overview.html", context)
