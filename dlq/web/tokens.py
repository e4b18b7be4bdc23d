"""The API tokens page: admins see, make and revoke everyone's, anyone else sees and revokes
their own."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import ADMIN, VIEWER
from dlq.actions import tokens
from dlq.actions.errors import NotFound
from dlq.http import request_id
from dlq.web.access import role_view
from dlq.web.forms.users import TokenForm


@require_safe
@role_view(VIEWER)
def token_list(request):
    rows = [tokens.describe(t) for t in tokens.visible(request.user)]
    return render(request, "tokens/list.html", {"tokens": rows})


@never_cache  # the answer to the POST holds the token: no cache may keep it
@role_view(ADMIN)
def token_add(request):
    """The token is shown once, in the answer to the POST that made it; it is never
    stored in the session or a cookie, and no later page can show it again."""
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if not first_sending(request, form.cleaned_data["once"]):
            messages.info(request, "That form was sent already and made its token (on this "
                          "list); a reload makes no second one.")  # fmt: skip
            return redirect("tokens:list")
        owner, name = form.cleaned_data["user"], form.cleaned_data["name"]
        token = tokens.issue(owner, request.user, name, request_id(request))
        context = {"token": token, "owner": owner, "name": name}
        return render(request, "tokens/created.html", context)
    status = 400 if form.is_bound and form.errors else 200
    return render(request, "tokens/form.html", {"form": form}, status=status)


def first_sending(request, once: str) -> bool:
    """Whether this filling-in of the form (its `once`) has not made a token yet."""
    if not once:
        return True  # a script's POST: nothing to recognise
    sent = request.session.get("tokens_made_by", [])
    if once in sent:
        return False
    request.session["tokens_made_by"] = [*sent[-49:], once]
    return True


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
