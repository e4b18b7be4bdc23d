"""Signing in with a local password: throttled per account and per client address by
django-axes, every attempt audited (who, from where, and whether it worked).

After DLQ_LOGIN_FAILURE_LIMIT failures for one user name, or from one address, further
attempts are refused for DLQ_LOGIN_LOCKOUT_MINUTES, the right password included, with a 429
and a page that says so. A success clears that user's and that address's failures.
"""

from axes.helpers import get_client_ip_address, get_cool_off
from django.conf import settings
from django.contrib.auth.views import LoginView, redirect_to_login
from django.shortcuts import render

from dlq import audit, http
from dlq.accounts import oidc
from dlq.models import AuditAction
from dlq.text import clean

NAME_LIMIT = 150  # what an audit row keeps of a user name that someone typed


class SignIn(LoginView):
    """The login page: the provider's button when OIDC is configured, the password form
    unless DLQ_LOCAL_LOGIN=false (then a posted password is refused, 403, and not counted
    as a failed attempt: there is nothing to guess)."""

    def post(self, request, *args, **kwargs):
        if not settings.DLQ_LOCAL_LOGIN:
            context = self.get_context_data(local_login_off=True)
            return self.render_to_response(context, status=403)
        return super().post(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["local_login"] = settings.DLQ_LOCAL_LOGIN
        context["sso_provider"] = oidc.provider_host() if oidc.enabled() else ""
        return context

    def form_valid(self, form):
        response = super().form_valid(form)
        audit.record(form.get_user(), AuditAction.SIGN_IN, detail=_where(self.request),
                     request_id=http.request_id(self.request))  # fmt: skip
        return response

    def form_invalid(self, form):
        # One audit row an attempt: a locked-out one is recorded by locked_out instead.
        if self.request.method == "POST" and not getattr(self.request, "axes_locked_out", False):
            audit.record(_typed_name(self.request), AuditAction.SIGN_IN_FAILED,
                         detail=_where(self.request),
                         request_id=http.request_id(self.request))  # fmt: skip
        return super().form_invalid(form)


def admin_login(request, extra_context=None):
    """Django admin's login form, replaced: it would sign in past the throttle and the
    audit. Anyone, signed in or not, is sent to the console's own (admin.site.login)."""
    return redirect_to_login(request.GET.get("next") or "/admin/")


def locked_out(request, original_response=None, credentials=None):
    """django-axes' answer to a sign-in while locked out (AXES_LOCKOUT_CALLABLE)."""
    audit.record(_typed_name(request), AuditAction.SIGN_IN_LOCKED, detail=_where(request),
                 request_id=http.request_id(request))  # fmt: skip
    minutes = int(get_cool_off(request).total_seconds() // 60)
    context = {"minutes": minutes, "limit": settings.AXES_FAILURE_LIMIT}
    return render(request, "registration/locked.html", context, status=429)


def axes_username(request, credentials=None) -> str:
    """The user name django-axes counts (AXES_USERNAME_CALLABLE): bounded like the audit
    row's, so a name of a megabyte is one more failure, not a database error."""
    name = (credentials or {}).get("username") or request.POST.get("username", "")
    return clean(str(name), NAME_LIMIT)


def _typed_name(request) -> str:
    # Untrusted text, escaped wherever it is shown; the audit row must stand on its own.
    name = request.POST.get("username", "") if request.method == "POST" else ""
    return clean(name, NAME_LIMIT) or "(no user name)"  # no NUL: PostgreSQL refuses it


def _where(request) -> dict:
    return {"address": get_client_ip_address(request) or ""}
