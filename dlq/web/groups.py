"""The failure groups page: parked messages grouped by fingerprint over a window."""

from django.shortcuts import render
from django.views.decorators.http import require_safe

from dlq.accounts.roles import VIEWER
from dlq.messages.groups import DEFAULT_WINDOW, FILTERS, WINDOWS, failure_groups, window_start
from dlq.web.access import role_view
from dlq.web.forms.groups import GroupQuery


@require_safe
@role_view(VIEWER)
def group_list(request):
    query = GroupQuery(request.GET)
    if not query.is_valid():
        context = {"errors": query.errors, "windows": [*WINDOWS, "all"]}
        return render(request, "groups/list.html", context, status=400)
    window = query.cleaned_data["window"] or DEFAULT_WINDOW
    since = window_start(window)
    filters = {name: query.cleaned_data[name] for name in FILTERS}
    groups = failure_groups(since, **filters)
    context = {"groups": groups, "window": window, "filters": filters,
               "windows": [*WINDOWS, "all"]}  # fmt: skip
    return render(request, "groups/list.html", context)
