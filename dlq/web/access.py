"""Access to the pages: the one role check every view goes through (`role_view`), and the
role the layout needs to show or hide buttons."""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect

from dlq.accounts.roles import ADMIN, OPERATOR, has_role, require_role, role_of


def _to_login(request):
    """The login page. An htmx request (a fragment, a poll) sends the whole browser there, to
    come back to the page it was on, not the login form swapped into a fragment."""
    if not request.htmx:
        return redirect_to_login(request.get_full_path())
    back = request.htmx.current_url_abs_path or "/"
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = "/"  # the header is the client's word
    return HttpResponseClientRedirect(redirect_to_login(back).url)


def role_view(needed: str):
    """Anonymous users go to the login page; a user without `needed` gets 403.
    The check is here, server-side, whatever buttons the page showed."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return _to_login(request)
            require_role(request.user, needed)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def console_context(request) -> dict:
    """The role for the header and for hiding buttons (hiding is a courtesy, not a check)."""
    user = getattr(request, "user", None)
    return {
        "console_role": role_of(user),
        "console_is_admin": has_role(user, ADMIN),
        "console_is_operator": has_role(user, OPERATOR),
    }
