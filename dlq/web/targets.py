"""The replay targets page: everyone sees where "original" replays go per queue pattern;
admins add, change and delete targets, each with a reason (audited)."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import ADMIN, VIEWER
from dlq.actions import targets
from dlq.actions.errors import ActionError
from dlq.http import request_id
from dlq.web.access import role_view
from dlq.web.forms.targets import DeleteForm, TargetForm


@require_safe
@role_view(VIEWER)
def target_list(request):
    return render(request, "targets/list.html", _context())


@require_POST
@role_view(ADMIN)
def target_save(request, pk: int | None = None):
    if pk is not None and not any(t.pk == pk for t in targets.listed()):
        raise Http404(f"no replay target {pk}")
    prefix = f"t{pk}" if pk else "new"
    form = TargetForm(request.POST, prefix=prefix)
    if form.is_valid():
        data = form.cleaned_data
        try:
            targets.save(request.user, data["reason"], data["queue_pattern"], data["exchange"],
                         data["routing_key"], pk, request_id(request))  # fmt: skip
        except ActionError as e:
            _add_errors(form, e)
        else:
            messages.success(request, f"Replay target for {data['queue_pattern']} saved.")
            return redirect("targets:list")
    return render(request, "targets/list.html", _context(**{prefix: form}), status=400)


@require_POST
@role_view(ADMIN)
def target_delete(request, pk: int):
    form = DeleteForm(request.POST, prefix=f"d{pk}")
    if form.is_valid():
        try:
            targets.delete(request.user, form.cleaned_data["reason"], pk, request_id(request))
        except ActionError as e:
            messages.error(request, str(e))
        else:
            messages.success(request, "Replay target deleted.")
        return redirect("targets:list")
    return render(request, "targets/list.html", _context(**{f"d{pk}": form}), status=400)


def _context(**bound) -> dict:
    rows = []
    for target in targets.listed():
        change, delete = f"t{target.pk}", f"d{target.pk}"
        initial = targets.describe(target)
        rows.append({
            "target": target,
            "form": bound.get(change) or TargetForm(prefix=change, initial=initial),
            "delete_form": bound.get(delete) or DeleteForm(prefix=delete),
            "open": change in bound or delete in bound,
        })  # fmt: skip
    return {"rows": rows, "new_form": bound.get("new") or TargetForm(prefix="new"),
            "new_open": "new" in bound}  # fmt: skip


def _add_errors(form, error: ActionError) -> None:
    for key, problems in error.errors.items():
        field = key if key in form.fields else None
        for problem in problems:
            form.add_error(field, problem)
