"""The topology health page: broker set-ups that lose messages silently (dlq/topology.py)."""

from django.shortcuts import render

from dlq import mgmt, topology
from dlq.roles import VIEWER
from dlq.views import role_view


@role_view(VIEWER)
def topology_health(request):
    try:
        findings, error = topology.check(), ""
    except mgmt.ManagementError as e:
        findings, error = [], str(e)
    return render(request, "topology/health.html", {"findings": findings, "error": error})
