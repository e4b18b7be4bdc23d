"""Operations pages: topology health (dlq/topology.py) and the drainers panel, which the
overview includes and htmx refreshes (dlq/heartbeat.py)."""

from django.shortcuts import render
from django.views.decorators.http import require_safe

from dlq.accounts.roles import VIEWER
from dlq.broker import mgmt
from dlq.health import topology
from dlq.health.drainers import overview_context
from dlq.web.access import role_view


@require_safe
@role_view(VIEWER)
def topology_health(request):
    try:
        findings, error = topology.check(), ""
    except mgmt.ManagementError as e:
        findings, error = [], str(e)
    return render(request, "topology/health.html", {"findings": findings, "error": error})


@require_safe
@role_view(VIEWER)
def drainers(request):
    """The overview's drainers panel alone, for its periodic refresh."""
    return render(request, "_drainers.html", overview_context())
