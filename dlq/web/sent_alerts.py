"""The sent alerts page: every alert that reached its channel, newest first, each group with
its lifecycle state (open, acknowledged, resolved), and for operators the buttons the chat
alerts carry: Acknowledge, Mute 1 h and Canary act as the signed-in user through
dlq/alerts/presses.py, the same code a press in Slack or Telegram runs."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import OPERATOR, VIEWER
from dlq.actions.errors import ActionError
from dlq.alerts import lifecycle, presses
from dlq.groups import worklist
from dlq.http import request_id
from dlq.messages.groups import name_of
from dlq.tasks import jobs as job_tasks
from dlq.web.access import role_view

PAGE = 20
MAX_OFFSET = 1_000_000
ACTION_CHOICES = [(key, words) for key, words in presses.ACTIONS.items()]


class PageQuery(forms.Form):
    offset = forms.IntegerField(required=False, min_value=0, max_value=MAX_OFFSET)


class ActForm(forms.Form):
    alert = forms.IntegerField(min_value=1, max_value=2**63 - 1)
    group = forms.CharField(max_length=16)
    action = forms.ChoiceField(choices=ACTION_CHOICES)
    offset = forms.IntegerField(required=False, min_value=0, max_value=MAX_OFFSET)


@require_safe
@role_view(VIEWER)
def sent_list(request):
    query = PageQuery(request.GET)
    if not query.is_valid():
        return HttpResponseBadRequest("offset must be a whole number from 0")
    return _page(request, query.cleaned_data["offset"] or 0)


def _page(request, offset: int, error: str = "", status: int = 200):
    sent = lifecycle.sent()
    count = sent.count()
    alerts = _described(list(sent[offset : offset + PAGE]))
    more = offset + len(alerts) < count
    context = {
        "alerts": alerts,
        "count": count,
        "offset": offset,
        "error": error,
        "next_query": f"offset={offset + len(alerts)}" if more else None,
        "paged": offset > 0,
        "first_query": "",
        "older": "Older alerts",
        "actions": list(presses.ACTIONS.items()),
    }
    return render(request, "alerts/sent.html", context, status=status)


def _described(attempts) -> list[dict]:
    """lifecycle.described, each group with its name from its newest stored message (or
    what the alert said of it, once nothing of it is stored)."""
    alerts = lifecycle.described(attempts)
    said = {a.pk: (a.digest.groups or {}) for a in attempts}
    names = {}
    for alert in alerts:
        for g in alert["groups"]:
            if g["group"] not in names:
                names[g["group"]] = name_of(g["group"])
            g["stored"] = names[g["group"]] is not None
            g["name"] = names[g["group"]] or _said_name(g["group"], said[alert["id"]])
    return alerts


def _said_name(group: str, groups: dict) -> str:
    info = groups.get(group) or {}
    failure = info.get("exception_type") or info.get("reason") or f"group {group}"
    return " · ".join(filter(None, [info.get("message_type", ""), failure]))


@require_POST
@role_view(OPERATOR)
def act(request):
    """A button of the sent alerts page, done as the signed-in user (a viewer never gets
    here: 403). The group must be one the alert named, and stored."""
    form = ActForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("alert (an id), group and action (ack, mute or canary)")
    data = form.cleaned_data
    offset = data["offset"] or 0
    alert = lifecycle.sent().filter(pk=data["alert"]).first()
    if alert is None:
        return _page(request, offset, "No such sent alert.", 404)
    group, action = data["group"], data["action"]
    if group not in dict(lifecycle.groups_of(alert)):
        return _page(request, offset, "That alert did not name that failure group.", 400)
    if worklist.one(group) is None:
        return _page(request, offset, "Nothing of this failure group is stored any more.", 404)
    reason = f"{presses.ACTIONS[action]} from the alerts page"
    try:
        with transaction.atomic():
            job = presses.act(request.user, group, action, reason, request_id(request))
            if job is not None:
                transaction.on_commit(lambda: job_tasks.start(job))
    except (ActionError, ValidationError) as e:
        status = getattr(e, "status", 400)
        return _page(request, offset, f"Not done: {presses.said(e)}", status)
    messages.success(request, _done(action, group, job))
    return redirect(reverse("alerts:sent") + (f"?offset={offset}" if offset else ""))


def _done(action: str, group: str, job) -> str:
    name = name_of(group) or group
    if job is not None:
        return f"Started a canary replay of {name} (job {job.pk})."
    return f"You {presses.DONE[action]} the failure group {name}."
