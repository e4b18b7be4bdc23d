"""The API tokens page: admins see and revoke everyone's, anyone else their own."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import VIEWER
from dlq.actions import tokens
from dlq.actions.errors import NotFound
from dlq.http import request_id
from dlq.web.access import role_view


@require_safe
@role_view(VIEWER)
def token_list(request):
    rows = [tokens.describe(t) for t in tokens.visible(request.user)]
    return render(request, "tokens/list.html", {"tokens": rows})


@require_POST
@role_view(VIEWER)
def token_revoke(request, pk):
    """Anyone may revoke their own token (a leaked one must die at once); admins any."""
    try:
        gone = tokens.revoke(pk, request.user, request_id(request))
    except NotFound:
        messages.error(request, f"There is no token {pk} you may revoke.")
        return redirect("tokens:list")
    messages.success(request, f"Token {gone['prefix']}… of {gone['user']} revoked.")
    return redirect("tokens:list")
