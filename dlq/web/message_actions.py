"""What an operator does to one message from its page: edit (and replay in the same step),
replay, discard, restore.

Each is a POST form that calls the action of dlq/actions/message.py (which checks the
status, audits and talks to the broker); its errors come back as form errors on the message
page."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from dlq.accounts.roles import OPERATOR
from dlq.actions import message as message_actions
from dlq.actions import replay as replays
from dlq.actions.errors import ActionError
from dlq.http import request_id
from dlq.messages import queries
from dlq.models import Message
from dlq.models.actions import Outcome
from dlq.web.access import role_view
from dlq.web.forms.messages import EditForm, ReasonForm, ReplayForm
from dlq.web.forms.replay import TargetForm
from dlq.web.messages import detail_context


def _page_again(request, pk: int, status: int, **bound):
    """The message page with the form that failed, its errors shown, and the failure's status."""
    message = queries.detail(pk)
    if message is None:  # deleted by retention meanwhile
        raise Http404(f"no message {pk}")
    return render(request, "messages/detail.html", detail_context(request, message, **bound),
                  status=status)  # fmt: skip


def _act(request, pk: int, form, name: str, act):
    """Run `act(reason)` when `form` is valid: then back to the page (a GET), else the page
    again with the form's errors."""
    status = 400
    if form.is_valid():
        try:
            act(form.cleaned_data["reason"])
        except ActionError as e:
            form.add_action_error(e)
            status = e.status
        else:
            return redirect("messages:detail", pk=pk)
    return _page_again(request, pk, status, **{name: form})


@require_POST
@role_view(OPERATOR)
def message_edit(request, pk: int):
    message = get_object_or_404(Message, pk=pk)
    form = EditForm(message, request.POST)
    if request.POST.get("then") == "replay":
        return _edit_then_replay(request, message, form, TargetForm(request.POST, prefix="after"))

    def edit(reason):
        message_actions.edit(
            pk, request.user, reason, request_id=request_id(request), **form.changes()
        )
        messages.success(request, "Message edited; the previous version is kept.")

    return _act(request, pk, form, "edit_form", edit)


@require_POST
@role_view(OPERATOR)
def message_replay(request, pk: int):
    get_object_or_404(Message.objects.only("id"), pk=pk)
    form = ReplayForm(request.POST)

    def replay(reason):
        result = message_actions.replay_one(pk, form.target_value(), request.user, reason,
                                    request_id(request), form.allows_drained())  # fmt: skip
        _tell_outcome(request, result)

    return _act(request, pk, form, "replay_form", replay)


NOTHING_DONE = "Nothing was saved, nothing was replayed."


def _edit_then_replay(request, message: Message, form: EditForm, target_form: TargetForm):
    """ "Save and replay": the edit, audited as an edit, then the replay with the same reason,
    audited as a replay. Nothing is saved when the target cannot be resolved (or reaches a
    queue the console drains, without the override), nothing is
    replayed when the edit is refused; a replay that fails leaves the edit saved, and the page
    says both."""
    pk, status = message.pk, 400
    valid = form.is_valid() & target_form.is_valid()  # both forms' errors shown at once
    if valid:
        target = target_form.target_value()
        try:
            replays.resolve(message, target)
            message_actions.drained_on_route(message, target, target_form.allows_drained())
        except replays.ReplayError as e:
            target_form.add_error("target", str(e))
            valid = False
        except ActionError as e:  # a route into a queue the console drains
            target_form.add_error("target", " ".join(e.errors["target"]))
            valid = False
    if valid:
        reason, rid = form.cleaned_data["reason"], request_id(request)
        try:
            message_actions.edit(pk, request.user, reason, request_id=rid, **form.changes())
        except ActionError as e:
            form.add_action_error(e)
            status = e.status
        else:
            _replay_after_edit(request, pk, target_form, reason, rid)
            return redirect("messages:detail", pk=pk)
    form.add_error(None, NOTHING_DONE)
    return _page_again(request, pk, status, edit_form=form, after_form=target_form)


def _replay_after_edit(request, pk: int, target_form, reason: str, rid: str) -> None:
    saved = "The edit is saved (the previous version is kept)"
    try:
        result = message_actions.replay_one(pk, target_form.target_value(), request.user, reason,
                                            rid, target_form.allows_drained())  # fmt: skip
    except ActionError as e:
        problems = "; ".join(p for problems in e.errors.values() for p in problems)
        messages.error(request, f"{saved}, but the replay was refused: {problems}. "
                                "The message stays parked, edited.")  # fmt: skip
        return
    if result.outcome == Outcome.CONFIRMED:
        messages.success(request, f"{saved} and replayed. Replay outcome: confirmed. "
                                  "The broker routed the message.")  # fmt: skip
        return
    detail = f" ({result.detail})" if result.detail else ""
    messages.error(request, f"{saved}, but the replay failed. Replay outcome: {result.outcome}"
                            f"{detail}. The message stays parked, edited.")  # fmt: skip


def _tell_outcome(request, result: message_actions.ReplayResult) -> None:
    if result.outcome == Outcome.CONFIRMED:
        messages.success(request, "Replay outcome: confirmed. The broker routed the message.")
        return
    detail = f" ({result.detail})" if result.detail else ""
    messages.error(request, f"Replay outcome: {result.outcome}{detail}. The message stays parked.")


def _reason_action(request, pk: int, name: str, act, done: str):
    """Discard and restore: only a reason, then the action and a word on the page."""
    get_object_or_404(Message.objects.only("id"), pk=pk)
    form = ReasonForm(request.POST, prefix=name)

    def run(reason):
        act(pk, request.user, reason, request_id(request))
        messages.success(request, done)

    return _act(request, pk, form, f"{name}_form", run)


@require_POST
@role_view(OPERATOR)
def message_discard(request, pk: int):
    done = "Message discarded; it can be restored."
    return _reason_action(request, pk, "discard", message_actions.discard, done)


@require_POST
@role_view(OPERATOR)
def message_restore(request, pk: int):
    done = "Message restored: it is parked again."
    return _reason_action(request, pk, "restore", message_actions.restore, done)


@require_POST
@role_view(OPERATOR)
def message_restore_version(request, pk: int, number: int):
    get_object_or_404(Message.objects.only("id"), pk=pk)
    form = ReasonForm(request.POST, prefix=f"version{number}")

    def run(reason):
        message_actions.restore_version(pk, number, request.user, reason, request_id(request))
        messages.success(request, f"Version {number} restored; the version it replaced is kept.")

    return _act(request, pk, form, f"version{number}_form", run)
