"""Operations pages: topology health (dlq/health/topology.py) and the drainers panel, which the
overview includes and htmx refreshes (dlq/health/drainers.py)."""

from django.shortcuts import render
from django.views.decorators.http import require_safe

from dlq.accounts.roles import VIEWER
from dlq.health import topology
from dlq.health.drainers import overview_context
from dlq.web.access import role_view


@require_safe
@role_view(VIEWER)
def topology_health(request):
    findings, error = topology.report()
    return render(request, "topology/health.html", {"findings": findings, "error": error})


@require_safe
@role_view(VIEWER)
def drainers(request):
    """The overview's drainers panel alone, for its periodic refresh."""
    return render(request, "_drainers.html", overview_context())
