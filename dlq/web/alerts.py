"""Alert pages: channels, delivery attempts, rules and mutes. Every change goes through
dlq/alerts/; these views only check the role, validate and render."""

from django.contrib import messages
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import ADMIN, OPERATOR, VIEWER
from dlq.alerts import channels, engine, mutes
from dlq.alerts.telegram import bots
from dlq.http import request_id
from dlq.models import AlertAttempt, AlertChannel, AlertRule, AttemptStatus, ChannelKind, Mute
from dlq.web.access import role_view
from dlq.web.forms.alerts import AttemptQuery, ChannelForm, MuteForm, RuleForm

ATTEMPTS_PAGE = 50


@require_safe
@role_view(VIEWER)
def channel_list(request):
    rows = list(AlertChannel.objects.order_by("name"))
    last = channels.last_attempts(rows)
    problems = bots.problems(rows)
    for channel in rows:
        channel.last_attempt = last.get(channel.pk)
        channel.bot_problem = problems.get(channel.pk, "")
        channel.failing = channels.is_failing(channel, channel.last_attempt)
    return render(request, "alerts/channels.html", {"channels": rows, "kinds": ChannelKind})


@role_view(ADMIN)
def channel_add(request, kind):
    if kind not in ChannelKind.values:
        raise Http404("no such channel kind")
    form = ChannelForm(kind, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            channel = channels.create_channel(kind, actor=request.user, **form.cleaned_data)
        except channels.ChannelError as e:
            form.add_error(None, str(e))  # the message never repeats the secret
        else:
            messages.success(request, f"Channel {channel.name} added.")
            return redirect("alerts:channels")
    context = {"form": form, "kind": kind, "channel": None}
    return render(request, "alerts/channel_form.html", context, status=_form_status(form))


@role_view(ADMIN)
def channel_edit(request, pk):
    channel = get_object_or_404(AlertChannel, pk=pk)
    initial = {"name": channel.name}
    form = ChannelForm(channel.kind, request.POST or None, initial=initial, editing=True)
    if request.method == "POST" and form.is_valid():
        try:
            channels.update_channel(channel, actor=request.user, **form.cleaned_data)
        except channels.ChannelError as e:
            form.add_error(None, str(e))
        else:
            messages.success(request, f"Channel {channel.name} saved.")
            return redirect("alerts:channels")
    context = {"form": form, "kind": channel.kind, "channel": channel}
    return render(request, "alerts/channel_form.html", context, status=_form_status(form))


def _form_status(form) -> int:
    """A form shown again because its input was refused answers 400, not 200."""
    return 400 if form.is_bound and form.errors else 200


@require_POST
@role_view(ADMIN)
def channel_enable(request, pk):
    channel = get_object_or_404(AlertChannel, pk=pk)
    channels.set_enabled(channel, True, actor=request.user)
    messages.success(request, f"Channel {channel.name} enabled.")
    return redirect("alerts:channels")


@require_POST
@role_view(ADMIN)
def channel_disable(request, pk):
    channel = get_object_or_404(AlertChannel, pk=pk)
    reason = f"disabled by {request.user.get_username()}"
    channels.set_enabled(channel, False, actor=request.user, reason=reason)
    messages.success(request, f"Channel {channel.name} disabled.")
    return redirect("alerts:channels")


@role_view(ADMIN)
def channel_delete(request, pk):
    """GET asks for confirmation; POST deletes (its attempts stay in the history)."""
    channel = get_object_or_404(AlertChannel, pk=pk)
    if request.method == "POST":
        channels.delete_channel(channel, actor=request.user)
        messages.success(request, f"Channel {channel.name} deleted.")
        return redirect("alerts:channels")
    return render(request, "alerts/channel_delete.html", {"channel": channel})


@require_POST
@role_view(ADMIN)
def channel_test(request, pk):
    channel = get_object_or_404(AlertChannel, pk=pk)
    # max_wait=0: one try now; a retry the channel asks for is left to the worker, so
    # this request never sleeps on Retry-After.
    attempt = channels.send_test(channel, actor=request.user, max_wait=0)
    level, text = _test_outcome(channel, attempt)
    messages.add_message(request, level, text)
    return redirect("alerts:channels")


def _test_outcome(channel: AlertChannel, attempt: AlertAttempt) -> tuple[int, str]:
    if attempt.status == AttemptStatus.SENT:
        return messages.SUCCESS, f"Test alert sent to {channel.name} (HTTP {attempt.http_status})."
    if attempt.status == AttemptStatus.QUEUED:
        # The returned attempt is the queued retry; the error is on the try before it.
        failed = AlertAttempt.objects.filter(channel=channel, id__lt=attempt.id).order_by("-id")
        error = failed.values_list("error", flat=True).first() or "no answer"
        return messages.WARNING, (
            f"Test alert to {channel.name} failed for now ({error}); "
            f"the worker retries at {attempt.not_before:%H:%M:%S} UTC."
        )
    if attempt.status == AttemptStatus.REJECTED:
        return messages.ERROR, (
            f"Test alert to {channel.name} was rejected ({attempt.error}); "
            "the channel has been disabled."
        )
    return messages.ERROR, f"Test alert to {channel.name}: {attempt.status} ({attempt.error})."


@require_safe
@role_view(VIEWER)
def attempt_list(request):
    """Newest first, keyset-paginated by id (no COUNT over a growing table)."""
    query = AttemptQuery(request.GET)
    if not query.is_valid():
        return HttpResponseBadRequest("channel and before must be positive integers")
    rows = AlertAttempt.objects.select_related("rule").order_by("-id")
    if query.cleaned_data["channel"]:
        rows = rows.filter(channel_id=query.cleaned_data["channel"])
    if query.cleaned_data["before"]:
        rows = rows.filter(id__lt=query.cleaned_data["before"])
    page = list(rows[: ATTEMPTS_PAGE + 1])
    context = {
        "attempts": page[:ATTEMPTS_PAGE],
        "older": page[ATTEMPTS_PAGE - 1].id if len(page) > ATTEMPTS_PAGE else None,
        "channel_id": query.cleaned_data["channel"],
        "channels": AlertChannel.objects.order_by("name"),
    }
    template = "alerts/attempts.html" + ("#rows" if request.htmx else "")
    return render(request, template, context)


@require_safe
@role_view(VIEWER)
def rule_list(request):
    context = {
        "rules": AlertRule.objects.prefetch_related("channels").order_by("name"),
        "mutes": Mute.objects.order_by("-until"),
        "mute_form": MuteForm(),
    }
    return render(request, "alerts/rules.html", context)


@role_view(ADMIN)
def rule_edit(request, pk=None):
    rule = get_object_or_404(AlertRule, pk=pk) if pk else None
    form = RuleForm(request.POST or None, instance=rule)
    if request.method == "POST" and form.is_valid():
        if rule is None:
            form.instance.cursor = engine.horizon_id()  # count from now, not the history
        rule = form.save()
        messages.success(request, f"Rule {rule.name} saved.")
        return redirect("alerts:rules")
    context = {"form": form, "rule": rule}
    return render(request, "alerts/rule_form.html", context, status=_form_status(form))


@require_POST
@role_view(OPERATOR)
def mute_add(request):
    """Operators mute during an incident; the rules page shows the form."""
    form = MuteForm(request.POST)
    if not form.is_valid():
        return render(request, "alerts/mute_form.html", {"form": form}, status=400)
    mutes.mute(actor=request.user, request_id=request_id(request), **form.cleaned_data)
    messages.success(request, "Mute added.")
    return redirect("alerts:rules")


@require_POST
@role_view(OPERATOR)
def mute_delete(request, pk):
    if not mutes.unmute(pk, request.user, request_id(request)):
        raise Http404("no such mute")
    messages.success(request, "Mute removed.")
    return redirect("alerts:rules")
