"""The redrive policies page: everyone sees each policy, its state and what it matches now
(parked, waiting, exhausted); admins add, change and delete them. "Preview" shows what a
policy as typed would match before it is saved."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe
from pydantic import ValidationError

from dlq.accounts.roles import ADMIN, VIEWER
from dlq.actions.errors import ActionError
from dlq.http import request_id
from dlq.models.redrive import RedrivePolicy
from dlq.redrive import matching, policies
from dlq.schemas.policies import PolicyIn
from dlq.web.access import role_view
from dlq.web.forms.overrides import DeleteForm
from dlq.web.forms.policies import PolicyForm, initial


@require_safe
@role_view(VIEWER)
def policy_list(request):
    return render(request, "policies/list.html", _context())


@require_POST
@role_view(ADMIN)
def policy_save(request, pk: int | None = None):
    if pk is not None and not RedrivePolicy.objects.filter(pk=pk).exists():
        raise Http404(f"no redrive policy {pk}")
    prefix = f"p{pk}" if pk else "new"
    form = PolicyForm(request.POST, prefix=prefix)
    preview = None
    if form.is_valid():
        values = _checked(form)
        if values is not None and "preview" in request.POST:
            preview = matching.would_match(values["match"])
        elif values is not None:
            try:
                policies.save(request.user, values, form.cleaned_data["reason"] or "", pk,
                              request_id(request))  # fmt: skip
            except ActionError as e:
                _add_errors(form, e.errors)
            else:
                messages.success(request, f"Redrive policy {values['name']} saved.")
                return redirect("policies:list")
    status = 200 if preview is not None else 400
    return render(request, "policies/list.html",
                  _context(**{prefix: form}, preview={prefix: preview}), status=status)  # fmt: skip


@require_POST
@role_view(ADMIN)
def policy_delete(request, pk: int):
    form = DeleteForm(request.POST, prefix=f"d{pk}")
    if form.is_valid():
        try:
            policies.delete(request.user, pk, form.cleaned_data["reason"], request_id(request))
        except ActionError as e:
            messages.error(request, str(e))
        else:
            messages.success(request, "Redrive policy deleted.")
        return redirect("policies:list")
    return render(request, "policies/list.html", _context(**{f"d{pk}": form}), status=400)


def _checked(form: PolicyForm) -> dict | None:
    """The values through the API's schema; None (with the form's errors) when refused."""
    values = form.values()
    try:
        return PolicyIn.model_validate({**values, "reason": ""}).values()
    except ValidationError as e:
        errors = {}
        for error in e.errors():
            loc = [str(part) for part in error["loc"]]
            field = "match" if loc[0] == "match" else loc[0]
            errors.setdefault(field, []).append(error["msg"])
        _add_errors(form, errors)
        return None


def _context(preview: dict | None = None, **bound) -> dict:
    preview = preview or {}
    rows = []
    for policy in policies.listed():
        change, delete = f"p{policy.pk}", f"d{policy.pk}"
        rows.append({
            "policy": policy,
            "counts": matching.counts(policy),
            "form": bound.get(change) or PolicyForm(prefix=change,
                                                    initial=initial(policies.describe(policy))),
            "delete_form": bound.get(delete) or DeleteForm(prefix=delete),
            "preview": preview.get(change),
            "open": change in bound or delete in bound,
        })  # fmt: skip
    return {"rows": rows, "new_form": bound.get("new") or PolicyForm(prefix="new"),
            "new_open": "new" in bound, "new_preview": preview.get("new")}  # fmt: skip


def _add_errors(form, errors: dict) -> None:
    for key, problems in errors.items():
        field = key if key in form.fields else None
        for problem in problems:
            form.add_error(field, problem)
