"""Signing in and out through the OpenID Connect provider (dlq/accounts/oidc.py), and the
page for someone the provider or the proxy vouched for whose groups grant no role.

/login/sso/ sends the browser to the provider with state, nonce and a PKCE challenge kept in
the session; /login/sso/callback/ takes the code back, and signs in only if everything checks
out. Whatever goes wrong there (a tampered state or nonce, a provider that is down or
answers nonsense) ends on a page that says so, with an audit row, never a 500.
"""

import logging

from authlib.integrations.base_client import OAuthError
from django.conf import settings
from django.contrib.auth import login, logout
from django.db import DatabaseError
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import render, resolve_url
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache

from dlq import audit, http
from dlq.accounts import external, oidc
from dlq.models import AuditAction, IdentitySource

log = logging.getLogger(__name__)

NEXT_KEY = "dlq_sso_next"
ID_TOKEN_KEY = "dlq_oidc_id_token"  # for the provider's logout (id_token_hint)
BACKEND = "dlq.accounts.backends.OidcBackend"


@never_cache
def start(request):
    if not oidc.enabled():
        raise Http404("single sign-on is not configured")
    request.session.pop(NEXT_KEY, None)  # an abandoned attempt's page is not this one's
    next_url = request.GET.get("next", "")
    if url_has_allowed_host_and_scheme(next_url, {request.get_host()}, request.is_secure()):
        request.session[NEXT_KEY] = next_url
    try:
        return oidc.client().authorize_redirect(request, _absolute(reverse("sso-callback")))
    except Exception as e:  # discovery or Authlib: the provider cannot be used right now
        return _failed(request, e, status=502)


@never_cache
def callback(request):
    if not oidc.enabled():
        raise Http404("single sign-on is not configured")
    try:
        token = oidc.client().authorize_access_token(request)
        claims = oidc.claims_from(token)
    except Exception as e:  # state, nonce, signature, expiry, the provider's own error...
        return _failed(request, e, status=400)
    try:
        outcome = external.sign_in(IdentitySource.OIDC, claims.issuer, claims.subject,
                                   claims.username, claims.display_name, claims.groups,
                                   settings.DLQ_OIDC_ROLE_MAP)  # fmt: skip
    except DatabaseError as e:  # claims the database cannot hold, whatever slipped through
        return _failed(request, e, status=400)
    detail = external.audit_detail(IdentitySource.OIDC, claims.issuer, claims.subject,
                                   outcome, request.META.get("REMOTE_ADDR", ""))  # fmt: skip
    if outcome.user is None:
        logout(request)  # whoever was signed in in this browser before, is no longer
        audit.record(f"oidc:{claims.subject}"[:150], AuditAction.SIGN_IN_REFUSED, detail=detail,
                     request_id=http.request_id(request))  # fmt: skip
        return refused(request, claims.display_name or claims.username, outcome)
    next_url = request.session.pop(NEXT_KEY, None) or resolve_url(settings.LOGIN_REDIRECT_URL)
    login(request, outcome.user, backend=BACKEND)  # a new session: nothing carried over
    request.session[ID_TOKEN_KEY] = token.get("id_token", "")
    audit.record(outcome.user, AuditAction.SIGN_IN, detail=detail,
                 request_id=http.request_id(request))  # fmt: skip
    return HttpResponseRedirect(next_url)


@never_cache
def sign_out(request):
    """Log out (POST, with the CSRF token); after a provider's sign-in, also at the provider
    when it offers an end-session endpoint, so the next sign-in asks who you are."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    id_token = request.session.get(ID_TOKEN_KEY)
    logout(request)
    back = resolve_url(settings.LOGOUT_REDIRECT_URL)
    if id_token is not None and oidc.enabled():
        at_provider = oidc.logout_url(id_token, _absolute(back))
        if at_provider:
            return HttpResponseRedirect(at_provider)
    return HttpResponseRedirect(back)


def _absolute(path: str) -> str:
    """The console's own URL for a path, from DLQ_CONSOLE_URL: what is registered at the
    provider, whatever Host header or scheme a proxy in between passed on."""
    return settings.DLQ_CONSOLE_URL.rstrip("/") + path


def refused(request, name: str, outcome: external.Outcome):
    """403: signed in at the provider or the proxy, but no group maps to a role. Not a
    viewer by default: the console says so and who can change it."""
    context = {"name": name, "groups": outcome.groups[: external.SHOWN_GROUPS],
               "more_groups": max(0, len(outcome.groups) - external.SHOWN_GROUPS),
               "disabled": outcome.disabled}  # fmt: skip
    return render(request, "registration/refused.html", context, status=403)


def _failed(request, error: Exception, status: int):
    """The page says what kind of failure it was; the log and the audit row (read by
    signed-in viewers, not by whoever reached this page) keep the whole text."""
    detail = error.detail if isinstance(error, oidc.ProviderError) else _short(error)
    log.warning("single sign-on failed: %s", detail)
    audit.record("(single sign-on)", AuditAction.SIGN_IN_FAILED,
                 detail={"via": "oidc", "error": detail,
                         "address": request.META.get("REMOTE_ADDR", "")},
                 request_id=http.request_id(request))  # fmt: skip
    context = {"reason": _public(error), "provider": oidc.provider_host()}
    return render(request, "registration/sso_failed.html", context, status=status)


def _public(error: Exception) -> str:
    name = type(error).__name__
    if isinstance(error, oidc.ProviderError):
        return str(error)
    if isinstance(error, OAuthError):  # the provider's or Authlib's error code
        return f"{name}: {error.error}" if error.error else name
    if type(error).__module__.startswith(("authlib.jose", "authlib.oidc", "joserfc")):
        return f"{name}: {str(error)[:200]}"  # fixed texts naming the claim that failed
    return name


def _short(error: Exception) -> str:
    return f"{type(error).__name__}: {str(error)[:300]}"
