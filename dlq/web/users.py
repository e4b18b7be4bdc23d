"""The users page (admins only): every user with their role and way of signing in, making
one, deactivating and reactivating. The changes are dlq/actions/users.py's."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from dlq.accounts.roles import ADMIN
from dlq.actions import users
from dlq.actions.errors import ActionError
from dlq.http import request_id
from dlq.web.access import role_view
from dlq.web.forms.users import UserForm


@require_safe
@role_view(ADMIN)
def user_list(request):
    return render(request, "users/list.html", {"users": users.listing()})


@role_view(ADMIN)
def user_add(request):
    form = UserForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = users.create(request.user, data["username"], data["role"], data["password"],
                                request_id(request))  # fmt: skip
        except ActionError as e:  # a user of that name made meanwhile
            form.add_error(None, str(e))
        else:
            messages.success(request, f"User {user.username} added as {data['role']}.")
            return redirect("users:list")
    status = 400 if form.is_bound and form.errors else 200
    return render(request, "users/form.html", {"form": form}, status=status)


def _set_active(request, pk: int, active: bool):
    try:
        user = users.set_active(request.user, pk, active, request_id(request))
    except ActionError as e:
        messages.error(request, f"Not changed: {'; '.join(sum(e.errors.values(), []))}.")
    else:
        done = "reactivated" if active else "deactivated: their sessions and tokens stop now"
        messages.success(request, f"User {user.username} {done}.")
    return redirect("users:list")


@require_POST
@role_view(ADMIN)
def user_deactivate(request, pk):
    return _set_active(request, pk, False)


@require_POST
@role_view(ADMIN)
def user_activate(request, pk):
    return _set_active(request, pk, True)
