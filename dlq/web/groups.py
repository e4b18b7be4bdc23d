"""The failure groups pages: the worklist (every group, most parked first, with its state
and who is on it), and one group's page: its header, who is on it (operators change it
there), and its newest messages."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import OPERATOR, VIEWER
from dlq.actions.errors import ActionError
from dlq.groups import triage, worklist
from dlq.groups.summary import group_summary
from dlq.http import request_id
from dlq.models import Message
from dlq.web.access import role_view
from dlq.web.forms.groups import parse_change, parse_worklist

STATE_WORDS = {"new": "new", "investigating": "investigating", "on_hold": "on hold",
               "resolved": "resolved"}  # fmt: skip


@require_safe
@role_view(VIEWER)
def group_list(request):
    query, errors = parse_worklist(request.GET)
    context = {"errors": errors, "params": request.GET, "states": STATE_WORDS,
               "owners": _owners(request.user)}  # fmt: skip
    if errors:
        return render(request, "groups/list.html", context, status=400)
    owner_id = _owner_id(query.owner)
    rows, count = [], 0
    if owner_id != 0:
        rows, count = worklist.listed(query.vhost or "", query.queue or "", query.state or "",
                                      owner_id, query.limit, query.offset)  # fmt: skip
    for row in rows:
        row["state_words"] = STATE_WORDS[row["state"]]
    context.update(groups=rows, count=count, **_pages(request, query, len(rows), count))
    return render(request, "groups/list.html", context)


def _owner_id(name: str | None) -> int | None:
    """The owner filter's user id; 0 for a name no user has (nothing matches)."""
    if not name:
        return None
    user = get_user_model().objects.filter(username=name).first()
    return user.pk if user else 0


def _owners(me) -> list[str]:
    """Who the owner filter offers: whoever owns a group, and the reader ("mine")."""
    names = set(
        get_user_model()
        .objects.filter(grouptriage__isnull=False)
        .values_list("username", flat=True)
    )
    return sorted(names - {me.get_username()})


def _pages(request, query, shown: int, count: int) -> dict:
    following = request.GET.copy()
    following["offset"] = query.offset + shown
    first = request.GET.copy()
    first.pop("offset", None)
    more = query.offset + shown < count
    return {"next_query": following.urlencode() if more else None, "paged": query.offset > 0,
            "first_query": first.urlencode(), "first_shown": query.offset + 1,
            "last_shown": query.offset + shown}  # fmt: skip


NEWEST = 20  # the group page's messages; the list has them all


@require_safe
@role_view(VIEWER)
def group_detail(request, group: str):
    return _detail(request, group)


def _detail(request, group: str, form=None, errors=None):
    summary = group_summary(group)
    if summary is None:
        raise Http404(f"no stored message of group {group}")
    row = worklist.one(group)
    newest = Message.objects.filter(group=group).order_by("-id")[:NEWEST]
    users = get_user_model().objects.filter(is_active=True).order_by("username")
    context = {"g": summary, "w": row, "w_state_words": STATE_WORDS[row["state"]], "rows": newest,
               "everything": {"group": group}, "form": form, "errors": errors or {},
               "users": users.values_list("username", flat=True)}  # fmt: skip
    return render(request, "groups/detail.html", context, status=400 if errors else 200)


@require_POST
@role_view(OPERATOR)
def group_change(request, group: str):
    """Set who is on the group, its note, ticket and hold; the page again, or its errors."""
    change, errors = parse_change(request.POST, request.user.get_username())
    if change is not None:
        try:
            triage.update(request.user, group, change.changes(), change.reason,
                          request_id(request))  # fmt: skip
        except ActionError as e:
            if e.status == 404:
                raise Http404(str(e)) from None
            errors = e.errors
    if errors:
        return _detail(request, group, form=request.POST, errors=errors)
    messages.success(request, "Saved: the change is in the audit trail.")
    return redirect("groups:detail", group=group)
