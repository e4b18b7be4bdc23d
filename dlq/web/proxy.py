"""Signing in behind a trusted reverse proxy (oauth2-proxy, a company SSO gateway): the
proxy names the user and their groups in headers (DLQ_AUTH_PROXY_USER_HEADER,
DLQ_AUTH_PROXY_GROUPS_HEADER).

The headers count only on a connection from DLQ_AUTH_PROXY_NETS (the peer address itself,
never X-Forwarded-For, which any client can write); from anywhere else they are ignored. A
session the proxy opened lasts only while the proxy keeps naming the same user with the same
groups: another user, other groups, no header or a request from outside the proxy networks
end it, and new headers sign in anew (the role re-evaluated). Groups are split at every
comma: a group holding a comma cannot come through the header.
"""

import ipaddress

from django.conf import settings
from django.contrib.auth import login, logout

from dlq import audit, http
from dlq.accounts import external
from dlq.models import AuditAction, IdentitySource
from dlq.text import clean
from dlq.web import sso

SESSION_KEY = "dlq_proxy"  # [user, groups] the proxy named when this session was opened
REFUSED_KEY = "dlq_proxy_refused"  # the same, for a refusal already audited
BACKEND = "dlq.accounts.backends.ProxyBackend"
MAX_HEADER_CHARS = 65536  # beyond what web servers pass on; longer is refused, not cut


def proxy_sign_in_middleware(get_response):
    def middleware(request):
        if settings.DLQ_AUTH_PROXY_USER_HEADER:
            refused = _from_headers(request)
            if refused is not None:
                return refused
        return get_response(request)

    return middleware


def _from_headers(request):
    named = _named(request) if _from_proxy(request) else None
    opened = request.session.get(SESSION_KEY)
    if opened is not None and (named != opened or not request.user.is_authenticated):
        logout(request)  # also forgets SESSION_KEY
    if named is None or (named == opened and request.user.is_authenticated):
        return None
    name, groups = named
    outcome = external.sign_in(IdentitySource.PROXY, "", name, name, name, groups,
                               settings.DLQ_AUTH_PROXY_ROLE_MAP)  # fmt: skip
    detail = external.audit_detail(IdentitySource.PROXY, "", name, outcome,
                                   request.META.get("REMOTE_ADDR", ""))  # fmt: skip
    if outcome.user is None:
        if request.session.get(REFUSED_KEY) != named:  # one audit row, not one a request
            audit.record(f"proxy:{name}"[:150], AuditAction.SIGN_IN_REFUSED, detail=detail,
                         request_id=http.request_id(request))  # fmt: skip
            request.session[REFUSED_KEY] = named
        return sso.refused(request, name, outcome)
    login(request, outcome.user, backend=BACKEND)
    request.session[SESSION_KEY] = named
    audit.record(outcome.user, AuditAction.SIGN_IN, detail=detail,
                 request_id=http.request_id(request))  # fmt: skip
    return None


def _from_proxy(request) -> bool:
    try:
        peer = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(peer in net for net in settings.DLQ_AUTH_PROXY_NETS)


def _named(request) -> list | None:
    """[user, sorted groups] as the proxy sent them (a list: it goes into the session as
    JSON), or None without a user."""
    name = request.META.get(settings.DLQ_AUTH_PROXY_USER_HEADER, "").strip()
    if not name or len(name) > 255 or clean(name) != name:
        return None
    header = request.META.get(settings.DLQ_AUTH_PROXY_GROUPS_HEADER, "")
    if len(header) > MAX_HEADER_CHARS:
        header = ""  # cut, its last group could read as another, shorter one: no groups
    groups = sorted({clean(g.strip(), 1000) for g in header.split(",") if g.strip()})
    return [name, groups]
