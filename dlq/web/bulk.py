"""The bulk review: the two steps of a bulk replay or discard.

The review (GET) shows exactly what a job would touch; the confirmation (POST, with a
reason) creates it through control.create_job, which freezes, validates and audits, and hands
it to a worker as the API does. Groups, jobs and the audit log have pages of their own.
"""

from urllib.parse import urlencode

from django.contrib import messages
from django.db import transaction
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from dlq.accounts.roles import OPERATOR
from dlq.actions import replay, routes
from dlq.actions.errors import ActionError, DrainedRoute
from dlq.http import request_id
from dlq.jobs import control
from dlq.messages.queries import filter_messages
from dlq.messages.selections import describe
from dlq.models import Message, Status
from dlq.tasks import jobs as job_tasks
from dlq.web.access import role_view
from dlq.web.forms import bulk as bulk_forms
from dlq.web.forms.bulk import (
    FILTER_NAMES,
    ConfirmForm,
    SafeReplayForm,
    Selection,
    parse_selection,
)
from dlq.web.forms.replay import destination

SAMPLE = 10


# --- bulk review --------------------------------------------------------------------------


def _selected(selection: Selection):
    """The parked messages the job would work on (a job skips anything else)."""
    qs = (
        Message.objects.filter(pk__in=selection.ids).order_by("-id")
        if selection.ids is not None
        else filter_messages(selection.filters)
    )
    return qs.filter(status=Status.PARKED)


def _route_of(message: Message, target, overrides, unreachable: dict) -> dict:
    """The message's route preview; once the management API has failed to answer, the
    others say so without asking again (ten timeouts would stall the page)."""
    try:
        route = replay.resolve(message, target, overrides)
    except replay.ReplayError as e:
        return {"error": str(e)}
    if unreachable:
        return {"exchange": route.exchange, "routing_key": route.routing_key, "queues": None,
                "warning": unreachable["warning"]}  # fmt: skip
    headers = routes.headers_of(message)
    preview = routes.preview(message.vhost, route, headers)
    if preview["queues"] is None:
        unreachable["warning"] = preview["warning"]
    return preview


def _review(selection: Selection, target) -> dict:
    """Count, sample and (for a replay to a valid target) each sample's route now."""
    selected = _selected(selection)
    sample = list(selected[:SAMPLE])
    overrides, unreachable = replay.load_overrides(), {}
    for message in sample:
        message.route = (
            None if target is None else _route_of(message, target, overrides, unreachable)
        )
    fan_out = any(len((m.route or {}).get("queues") or ()) > 1 for m in sample)
    drained = sorted({q for m in sample for q in (m.route or {}).get("drained") or ()})
    count = selected.count()
    context = {"count": count, "sample": sample, "fan_out": fan_out, "failing": _failing(sample),
               "drained": bool(drained), "drained_queues": drained}  # fmt: skip
    if selection.ids is not None:
        context["not_parked"] = len(selection.ids) - count
        context["in_words"] = describe({"status": Status.PARKED.value}, count, chosen=True)
    else:
        context["in_words"] = describe({"status": Status.PARKED.value, **selection.filters}, count)
    return context


def _failing(sample: list) -> dict | None:
    """The sampled routes that would fail (no exchange, nothing bound, a target that does
    not resolve): how many of the sample, and the first one's error. Confirming those needs
    a second, explicit confirmation (ConfirmForm.replay_failing)."""
    errors = [
        m.route.get("error") or m.route["warning"]
        for m in sample
        if m.route and (m.route.get("error") or m.route.get("fails"))
    ]
    return {"count": len(errors), "of": len(sample), "error": errors[0]} if errors else None


def _freeze_review(selection: Selection) -> None:
    """A filter gets an upper bound at review time, so the job confirmed later covers what
    was reviewed and not what arrived in between."""
    if selection.filters is not None and "received_before" not in selection.filters:
        selection.filters["received_before"] = timezone.now()


def _confirm_url(selection: Selection) -> str:
    """The review's own address, naming the selection only: the target is posted with the
    confirmation, from the radios the operator sees."""
    return f"{reverse('bulk:review')}?{urlencode(selection.params())}"


def _confirm_label(selection: Selection, count: int, target) -> str:
    """The button says what it does: "Replay 26 messages to the failed queue"."""
    verb = "Replay" if selection.action == "replay" else "Discard"
    label = f"{verb} {count} message{pluralize(count)}"
    return f"{label} {destination(target)}" if target is not None else label


def _back_url(query) -> str:
    """Cancel goes to the messages list showing the filter as the operator gave it."""
    given = [(name, query[name]) for name in FILTER_NAMES if query.get(name)]
    return f"{reverse('messages:list')}?{urlencode(given)}" if given else reverse("messages:list")


@require_http_methods(["GET", "POST"])
@role_view(OPERATOR)
def bulk_review(request):
    """The review (GET; with htmx, only what the target changes), a route preview of the
    posted target (POST with `preview`), or the confirmation (POST)."""
    selection = parse_selection(request.GET)
    if selection.errors:
        return render(request, "bulk/review.html", {"selection": selection}, status=400)
    _freeze_review(selection)
    replaying = selection.action == "replay"
    target_form = bulk_forms.target_form(request)
    target = target_form.target_value() if replaying and target_form.is_valid() else None
    confirming = request.method == "POST" and "preview" not in request.POST
    # A preview keeps what was typed, without calling it wrong yet.
    confirm = ConfirmForm(request.POST) if confirming else ConfirmForm(initial=request.POST.dict())
    review = _review(selection, target)
    safe = _safe_form(request, confirming, review["count"])
    if confirming:
        job, into_drained = _create(request, selection, target_form, confirm, safe,
                                    review["failing"])  # fmt: skip
        if job is not None:
            return redirect("jobs:detail", job.pk)
        review["drained"] |= into_drained  # beyond the sample: offer the override all the same
    context = {"selection": selection, "target_form": target_form, "confirm": confirm, "safe": safe,
               "replaying": replaying, "confirm_url": _confirm_url(selection),
               "confirm_label": _confirm_label(selection, review["count"], target),
               "back_url": _back_url(request.GET), **review}  # fmt: skip
    bad = confirming or (replaying and not target_form.is_valid())
    template = "bulk/review.html" + ("#preview" if request.htmx else "")
    return render(request, template, context, status=400 if bad else 200)


def _safe_form(request, confirming: bool, count: int) -> SafeReplayForm:
    """The safe-replay fields: as posted with the confirmation, else their defaults for
    this many messages (a preview keeps what was typed), with the line saying why."""
    initial, why = bulk_forms.safe_defaults(count, request.GET)
    if confirming:
        safe = SafeReplayForm(request.POST, prefix="safe")
    else:
        safe = SafeReplayForm(initial={**initial, **request.POST.dict()}, prefix="safe")
    safe.why = why
    return safe


def _create(request, selection, target_form, confirm, safe, failing):
    """The job, queued for a worker once committed; None with the errors on the forms (and
    whether it was refused for a route into a drained queue). Sampled routes that fail need
    the second confirmation: a job to a missing exchange would only fail message by message."""
    replaying = selection.action == "replay"
    if not confirm.is_valid() or (replaying and not (target_form.is_valid() and safe.is_valid())):
        return None, False
    if replaying and failing and not confirm.cleaned_data["replay_failing"]:
        confirm.add_error("replay_failing", f"{failing['count']} of the {failing['of']} sampled"
                          " routes fail: confirm that you replay anyway, or choose another"
                          " target")  # fmt: skip
        return None, False
    target = target_form.target_value() if replaying else "original"
    try:
        job = control.create_job(
            request.user, selection.action, ids=selection.ids, filters=selection.filters,
            target=target, rate_per_s=confirm.cleaned_data["rate_per_s"],
            reason=confirm.cleaned_data["reason"], request_id=request_id(request),
            allow_drained=replaying and target_form.allows_drained(),
            **(control.safety(target, safe.given()) if replaying else {}),
        )  # fmt: skip
    except ActionError as e:
        for name, problems in e.errors.items():
            for problem in problems:
                confirm.add_error(None, f"{name}: {problem}")
        return None, isinstance(e, DrainedRoute)
    transaction.on_commit(lambda: job_tasks.start(job))
    messages.success(request, f"Job {job.pk} created: {job.action} of {job.total} messages.")
    return job, False
