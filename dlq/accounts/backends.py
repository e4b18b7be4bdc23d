"""Django authentication backends: local passwords (switchable), and the sessions of users
an identity provider or a trusted proxy signed in (dlq/accounts/external.py)."""

from django.conf import settings
from django.contrib.auth.backends import ModelBackend

from dlq.models import Identity


class LocalPasswordBackend(ModelBackend):
    """User name and password, unless DLQ_LOCAL_LOGIN=false. Switching it off also ends
    the sessions opened with a password. Users made for an external identity have no
    usable password; they are refused here all the same."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not settings.DLQ_LOCAL_LOGIN:
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and Identity.objects.filter(user=user).exists():
            return None
        return user

    def get_user(self, user_id):
        return super().get_user(user_id) if settings.DLQ_LOCAL_LOGIN else None


class _External(ModelBackend):
    """Keeps the sessions that a sign-in elsewhere opened with `login(..., backend=...)`;
    it authenticates no credentials itself, and lets its sessions go once its way of
    signing in is switched off."""

    def authenticate(self, request, **credentials):
        return None

    def switched_on(self) -> bool:
        raise NotImplementedError

    def get_user(self, user_id):
        return super().get_user(user_id) if self.switched_on() else None


class OidcBackend(_External):
    """Sessions opened by dlq/web/sso.py."""

    def switched_on(self) -> bool:
        return bool(settings.DLQ_OIDC_DISCOVERY_URL)


class ProxyBackend(_External):
    """Sessions opened by dlq/web/proxy.py."""

    def switched_on(self) -> bool:
        return bool(settings.DLQ_AUTH_PROXY_USER_HEADER)
