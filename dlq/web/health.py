"""Operations pages: the health page (the cluster's nodes and the drainers' nodes:
dlq/health/cluster.py; topology warnings by check, what was left out as fine and the
acknowledged ones: dlq/health/topology.py, by_design.py, acknowledgements.py) and the
drainers panel, which the overview includes and htmx refreshes (dlq/health/drainers.py)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import ADMIN, VIEWER
from dlq.health import acknowledgements, by_design, cluster, drained, topology
from dlq.health.drainers import overview_context
from dlq.http import request_id
from dlq.web.access import role_view
from dlq.web.forms.topology import AcknowledgementForm

OPEN_UP_TO = 10  # a check with more rows than this starts collapsed


@require_safe
@role_view(VIEWER)
def topology_health(request):
    return render(request, "topology/health.html", _context())


@require_POST
@role_view(ADMIN)
def topology_acknowledge(request):
    return _change(request, acknowledgements.acknowledge, "acknowledged", "acknowledge")


@require_POST
@role_view(ADMIN)
def topology_withdraw(request):
    return _change(request, acknowledgements.withdraw, "no longer acknowledged", "withdraw")


def _change(request, change, done: str, action: str):
    """Acknowledge or withdraw, then back to the page; bad input: the page again, 400, with
    the errors in the row the form came from (or above the warnings, if no row is)."""
    form = AcknowledgementForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            change(request.user, data["vhost"], data["queue"], data["check_name"],
                   data["reason"], request_id(request))  # fmt: skip
        except acknowledgements.AcknowledgementError as e:
            for field, problems in e.errors.items():
                for problem in problems:
                    form.add_error(field if field == "reason" else None, problem)
        else:
            title = topology.CHECKS[data["check_name"]][0]
            messages.success(request, f"{title} on {data['queue']}: {done}.")
            return redirect("health:topology")
    return render(request, "topology/health.html", _context(form, action), status=400)


def _context(failed: AcknowledgementForm | None = None, action: str = "") -> dict:
    """The page; `failed`: a refused acknowledge or withdraw form, shown in its row."""
    survey = topology.report()
    waiting, acknowledged = acknowledgements.split(survey.findings)
    refused = _key_of(failed.data) if failed is not None else None
    checks = _by_check(waiting, refused if action == "acknowledge" else None, failed)
    acked = _acknowledged(acknowledged, refused if action == "withdraw" else None, failed)
    placed = any(r["form"] for s in checks for r in s["rows"]) or any(a["form"] for a in acked)
    nodes, nodes_error = cluster.report()
    drainers = overview_context()["drainers"]
    for drainer in drainers:
        drainer["nodes"] = cluster.drainer_nodes(nodes, drainer["node"])
    counts = survey.left_out
    left_out = [(n, text) for why, text in by_design.LEFT_OUT.items() if (n := counts[why])]
    return {
        "checks": checks,
        "acknowledged": acked,
        "refused": None if placed else failed,  # no row for it: shown above the warnings
        "left_out": left_out,
        "left_out_total": survey.left_out.total(),
        "error": survey.error,
        "cluster": nodes,
        "cluster_error": nodes_error,
        "drainers": drainers,
        **drained.context(),
    }


def _acknowledged(acknowledged: list, refused: tuple | None, failed) -> list[dict]:
    rows = []
    for a in acknowledged:
        key = (a.ack.vhost, a.ack.queue, a.ack.check_name)
        title = topology.CHECKS.get(a.ack.check_name, (a.ack.check_name,))[0]
        rows.append({"ack": a.ack, "finding": a.finding, "title": title,
                     "form": failed if refused == key else None})  # fmt: skip
    return rows


def _by_check(findings: list[topology.Finding], refused: tuple | None, failed) -> list[dict]:
    """One section per check, worst first: its title, why it matters, its rows (the refused
    form in its row)."""
    present = {f.check for f in findings}
    checks = [c for c in topology.CHECKS if c in present] + sorted(present - set(topology.CHECKS))
    sections = []
    for check in checks:
        title, why = topology.CHECKS.get(check, (check, ""))
        rows = [{"finding": f, "form": failed if refused == (f.vhost, f.queue, f.check) else None}
                for f in findings if f.check == check]  # fmt: skip
        short = len(rows) <= OPEN_UP_TO or any(r["form"] for r in rows)
        sections.append({"check": check, "title": title, "why": why, "rows": rows, "open": short})
    return sections


def _key_of(data) -> tuple:
    return (data.get("vhost", ""), data.get("queue", ""), data.get("check_name", ""))


@require_safe
@role_view(VIEWER)
def drainers(request):
    """The overview's drainers panel alone for its periodic refresh (htmx); opened
    directly (a bookmark, a link), the whole page around it."""
    template = "_drainers.html" if request.htmx else "health/drainers.html"
    response = render(request, template, overview_context())
    patch_vary_headers(response, ["HX-Request"])  # the back button must not show a fragment
    return response
