"""The messages pages: the filtered list, one message, its raw body and its route preview.
The operator actions on one message are in web/message_actions.py."""

from urllib.parse import urlencode

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_safe

from dlq.accounts.roles import OPERATOR, VIEWER, has_role
from dlq.actions import message as message_actions
from dlq.actions import replay, routes
from dlq.messages import display, history, queries, symfony, traces
from dlq.messages.groups import group_name
from dlq.models import DrainedQueue, Message, Status
from dlq.redrive import matching
from dlq.web.access import role_view
from dlq.web.forms import header_rows
from dlq.web.forms.messages import (
    PAGE_SIZE,
    EditForm,
    ReasonForm,
    ReplayForm,
    filter_values,
    parse_list_query,
)
from dlq.web.forms.replay import TargetForm

COUNT_CAP = 10_000  # counting stops here: an exact count of a million rows costs seconds


@require_safe
@role_view(VIEWER)
def message_list(request):
    filters, cursor, errors = parse_list_query(request.GET)
    rows, next_cursor = [], None
    if not errors:
        rows, next_cursor = queries.page(queries.filter_messages(filters), cursor, PAGE_SIZE)
    values = filter_values(request.GET)
    given = {name: value for name, value in values.items() if value}
    context = {
        "rows": rows,
        "filters": filters,
        "errors": errors,
        "values": values,
        "given": given,
        "filtered": any(name != "tz" for name in given),  # tz only says how times are read
        "query": urlencode(given),
        "next_query": urlencode({**given, "cursor": next_cursor}) if next_cursor else "",
        "paged": bool(cursor),
        "statuses": Status.values,
        "queues": DrainedQueue.objects.order_by("name").values_list("name", flat=True).distinct(),
    }
    # One vhost needs no column nor filter; a vhost filter in the URL keeps its field shown.
    vhosts = queries.known_vhosts()
    context["vhosts"] = vhosts if len(vhosts) > 1 or values["vhost"] else []
    # Going back to a page htmx no longer has in its cache needs the whole page.
    partial = request.htmx and not request.htmx.history_restore_request
    template = "messages/list.html#results" if partial else "messages/list.html"
    response = render(request, template, context, status=400 if errors else 200)
    patch_vary_headers(response, ["HX-Request"])  # one URL, two bodies: caches must tell them apart
    return response


@require_safe
@role_view(VIEWER)
def message_count(request):
    """How many messages match the filter, counted only when asked and only up to a cap."""
    filters, _, errors = parse_list_query(request.GET)
    if errors:
        return render(request, "messages/_count.html", {"errors": errors}, status=400)
    matching = queries.filter_messages(filters).order_by().values("id")
    count = matching[: COUNT_CAP + 1].count()
    context = {"count": count, "shown": f"{min(count, COUNT_CAP):,}", "capped": count > COUNT_CAP}
    return render(request, "messages/_count.html", context)


@require_safe
@role_view(VIEWER)
def message_detail(request, pk: int):
    message = queries.detail(pk)
    if message is None:
        raise Http404(f"no message {pk}")
    return render(request, "messages/detail.html", detail_context(request, message))


def detail_context(request, message: Message, **forms) -> dict:
    """Everything the message page shows; `forms` are bound forms to show with their errors."""
    context = {
        "message": message,
        "body": display.render(bytes(message.body), message.content_encoding, message.content_type),
        "properties": display.property_rows(message.properties),
        "headers": display.header_rows(message.headers),
        "deaths": display.death_timeline(message.headers),
        "trace": _trace(message.exception_stacktrace),
        "symfony": symfony.read(message.headers, bytes(message.body)),
        "group_name": group_name(message),
        "trace_url": traces.link(message.trace_id),
        "history": history.with_diffs(message.history),
        "redrive": matching.row_of(message),
        "open_form": next(iter(forms), None),
    }
    context["versions"] = _versions(message, forms, has_role(request.user, OPERATOR))
    if has_role(request.user, OPERATOR):
        context.update(_action_forms(message, forms))
    # A form the message's status no longer offers (discarded meanwhile): its errors still show.
    shown = {f"version{v['version'].number}_form": v["form"] for v in context["versions"]}
    gone = [
        form for name, form in forms.items() if form not in (context.get(name), shown.get(name))
    ]
    context["action_errors"] = [e for form in gone for e in form.non_field_errors()]
    return context


SHOWN_VERSIONS = 10  # each is diffed against the current one on every view; the API has all


def _versions(message: Message, bound: dict, operator: bool) -> list[dict]:
    """The earlier versions, newest first, each with what restoring it would change and,
    for an operator while the message is parked, the form that restores it."""
    shown = []
    for version in message.versions.order_by("-number")[:SHOWN_VERSIONS]:
        name = f"version{version.number}_form"
        form = None
        if operator and message.status == Status.PARKED:
            form = bound.get(name) or ReasonForm(prefix=f"version{version.number}")
        diff = history.edit_diff(message_actions.version_diff(version, message))
        shown.append({"version": version, "diff": diff, "form": form, "open": name in bound})
    return shown


TRACE_HEAD = 8  # lines of a stack trace shown before "the whole stack trace"


def _trace(text: str) -> dict:
    lines = text.strip().splitlines()
    return {"head": "\n".join(lines[:TRACE_HEAD]), "more": len(lines) > TRACE_HEAD,
            "lines": len(lines)}  # fmt: skip


def _action_forms(message: Message, bound: dict) -> dict:
    """The operator's forms that the message's status allows."""
    if message.status == Status.PARKED:
        return {
            "edit_form": bound.get("edit_form") or EditForm(message),
            # Where "Save and replay" sends the edited message.
            "after_form": bound.get("after_form") or TargetForm(prefix="after"),
            "row_types": header_rows.ROW_TYPES,
            "replay_form": bound.get("replay_form") or ReplayForm(),
            "discard_form": bound.get("discard_form") or ReasonForm(prefix="discard"),
        }
    if message.status == Status.DISCARDED:
        return {"restore_form": bound.get("restore_form") or ReasonForm(prefix="restore")}
    return {}


@require_safe
@role_view(VIEWER)
def message_raw(request, pk: int):
    """The stored body byte for byte, as a download (never rendered by the browser)."""
    message = get_object_or_404(Message.objects.only("id", "body"), pk=pk)
    response = HttpResponse(bytes(message.body), content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="message-{message.pk}.bin"'
    return response


@require_safe
@role_view(VIEWER)
def route_preview(request, pk: int):
    """Where a replay to the chosen target would go now (loaded into the replay form, and
    into the edit form's "replay after saving", whose fields are named after-...)."""
    message = get_object_or_404(Message, pk=pk)
    prefix = "after" if "after-target" in request.GET else "replay"
    form = ReplayForm(request.GET, preview=True, prefix=prefix)
    context = {"form": form, "preview": None, "problem": None}
    if form.is_valid():
        try:
            route = replay.resolve(message, form.target_value())
        except replay.ReplayError as e:
            context["problem"] = str(e)
        else:
            headers = routes.headers_of(message)
            context["preview"] = routes.preview(message.vhost, route, headers)
            context["note"] = replay.route_note(message, route)
            if route.target == "original":
                context["override"] = replay.override_for(message)
    return render(request, "messages/_route.html", context, status=200 if form.is_valid() else 400)
