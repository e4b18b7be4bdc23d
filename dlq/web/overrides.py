"""The replay overrides page: everyone sees where "original" replays go per queue pattern;
admins add, change and delete overrides, each with a reason (audited)."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import ADMIN, VIEWER
from dlq.actions import overrides
from dlq.actions.errors import ActionError
from dlq.http import request_id
from dlq.web.access import role_view
from dlq.web.forms.overrides import DeleteForm, OverrideForm


@require_safe
@role_view(VIEWER)
def override_list(request):
    return render(request, "overrides/list.html", _context())


@require_safe
@role_view(VIEWER)
def old_address(request):
    """/replay-targets/, the page's address before it was named for overrides (bookmarks)."""
    return redirect("overrides:list", permanent=True)


@require_POST
@role_view(ADMIN)
def override_save(request, pk: int | None = None):
    if pk is not None and not any(o.pk == pk for o in overrides.listed()):
        raise Http404(f"no replay override {pk}")
    prefix = f"o{pk}" if pk else "new"
    form = OverrideForm(request.POST, prefix=prefix)
    if form.is_valid():
        data = form.cleaned_data
        try:
            overrides.save(request.user, data["reason"], data["queue_pattern"], data["exchange"],
                           data["routing_key"], pk, request_id(request))  # fmt: skip
        except ActionError as e:
            _add_errors(form, e)
        else:
            messages.success(request, f"Replay override for {data['queue_pattern']} saved.")
            return redirect("overrides:list")
    return render(request, "overrides/list.html", _context(**{prefix: form}), status=400)


@require_POST
@role_view(ADMIN)
def override_delete(request, pk: int):
    form = DeleteForm(request.POST, prefix=f"d{pk}")
    if form.is_valid():
        try:
            overrides.delete(request.user, form.cleaned_data["reason"], pk, request_id(request))
        except ActionError as e:
            messages.error(request, str(e))
        else:
            messages.success(request, "Replay override deleted.")
        return redirect("overrides:list")
    return render(request, "overrides/list.html", _context(**{f"d{pk}": form}), status=400)


def _context(**bound) -> dict:
    rows = []
    for override in overrides.listed():
        change, delete = f"o{override.pk}", f"d{override.pk}"
        initial = overrides.describe(override)
        rows.append({
            "override": override,
            "form": bound.get(change) or OverrideForm(prefix=change, initial=initial),
            "delete_form": bound.get(delete) or DeleteForm(prefix=delete),
            "open": change in bound or delete in bound,
        })  # fmt: skip
    return {"rows": rows, "new_form": bound.get("new") or OverrideForm(prefix="new"),
            "new_open": "new" in bound}  # fmt: skip


def _add_errors(form, error: ActionError) -> None:
    for key, problems in error.errors.items():
        field = key if key in form.fields else None
        for problem in problems:
            form.add_error(field, problem)
