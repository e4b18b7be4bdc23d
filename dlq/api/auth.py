"""API authentication: bearer tokens (dlq/accounts/tokens.py) and the browser session.

Each authenticator is made for the role an endpoint needs (`BearerAuth(OPERATOR)`): it
answers None without valid credentials (ninja answers 401), raises PermissionDenied (403)
for a user below that role (dlq/accounts/roles.py), else answers the user. A token acts with
its user's role.
"""

from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from ninja.errors import AuthorizationError
from ninja.security import HttpBearer
from ninja.security.apikey import APIKeyCookie
from ninja.utils import check_csrf

from dlq.accounts.roles import VIEWER, has_role, require_role
from dlq.accounts.tokens import user_for_token


class _NeedsRole:
    def __init__(self, role: str = VIEWER, **kwargs):
        self.role = role
        super().__init__(**kwargs)

    def allowed(self, user):
        if user is not None:
            require_role(user, self.role)
        return user


class BearerAuth(_NeedsRole, HttpBearer):
    """`Authorization: Bearer TOKEN`."""

    def authenticate(self, request, token):
        return self.allowed(user_for_token(token) if token else None)


class SessionAuth(_NeedsRole, APIKeyCookie):
    """The browser session; requests that change state must carry the CSRF token.

    Unlike ninja's `django_auth`, an anonymous request is answered 401 before any CSRF
    check, and a request that sends a bearer token is left to the token alone.
    """

    param_name = settings.SESSION_COOKIE_NAME

    def _get_key(self, request):
        return None  # the session middleware has already read the cookie

    def authenticate(self, request, key):
        user = request.user
        bearer = request.headers.get("Authorization", "").split(" ")[0].lower() == "bearer"
        if bearer or not user.is_authenticated:
            return None
        if check_csrf(request) is not None:  # always passes for GET, HEAD, OPTIONS
            raise AuthorizationError(message="CSRF check failed")
        return self.allowed(user)


def docs_access(view):
    """The API's schema and docs are for viewers and above, by token or session, like the
    API itself: anonymous callers get 401 (the docs page sends a browser to the login page),
    a user without a role 403."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        user = BearerAuth(VIEWER)(request)
        if user is None and request.user.is_authenticated:
            user = request.user
        if user is None:
            if request.path.endswith("/docs"):
                return redirect_to_login(request.get_full_path())
            response = JsonResponse({"detail": "authentication required"}, status=401)
            response["WWW-Authenticate"] = "Bearer"
            return response
        if not has_role(user, VIEWER):
            raise PermissionDenied("this needs the viewer role")
        return view(request, *args, **kwargs)

    return wrapper
