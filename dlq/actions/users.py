"""Console users as an admin manages them from the pages: who exists, with which role and
way of signing in; making one; deactivating and reactivating. Each change is audited.

A user's role is a Django group (dlq/accounts/roles.py). People who sign in through an
identity provider or a trusted proxy get their user at their first sign-in, linked by their
identity and never by a name (dlq/accounts/external.py), with the role their groups map to,
read again at every sign-in; an admin can only deactivate those here. A user made here signs
in with a password, or has none and acts only through API tokens (a service account).
Deactivating ends the user's sessions and tokens at their next request (both check
`is_active`); nothing is deleted, so the audit trail keeps its names.
"""

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count

from dlq import audit
from dlq.accounts.roles import ROLES, grant, rank
from dlq.actions.errors import ActionError, NotFound
from dlq.models import AuditAction

SIGN_IN_WAYS = {"oidc": "single sign-on", "proxy": "sign-in proxy"}


def listing() -> list[dict]:
    """Every user, active first then by name, with what an admin needs to know."""
    users = (
        get_user_model()
        .objects.annotate(tokens=Count("apitoken", distinct=True))
        .prefetch_related("groups", "identity_set")
        .order_by("-is_active", "username")
    )
    return [_row(u) for u in users]


def _row(user) -> dict:
    return {"id": user.pk, "username": user.get_username(), "role": _role(user),
            "sign_in": _sign_in(user), "active": user.is_active,
            "last_login": user.last_login, "tokens": user.tokens}  # fmt: skip


def _role(user) -> str | None:
    """roles.role_of from the prefetched groups (one query for the whole list)."""
    if user.is_superuser:
        return "admin"
    held = [g.name for g in user.groups.all() if g.name in ROLES]
    return max(held, key=rank) if held else None


def _sign_in(user) -> str:
    sources = sorted({SIGN_IN_WAYS.get(i.source, i.source) for i in user.identity_set.all()})
    if sources:
        return ", ".join(sources)
    return "password" if user.has_usable_password() else "no password (API tokens only)"


def create(actor, username: str, role: str, password: str | None, request_id: str = ""):
    """A new local user with `role`; `password` None makes a user with no usable password.
    The caller has validated the name and the password (the form says what is wrong)."""
    if role not in ROLES:
        raise ActionError({"role": [f"one of {', '.join(ROLES)}"]})
    with transaction.atomic():
        users = get_user_model().objects
        if users.filter(username__iexact=username).exists():
            raise ActionError({"username": [f"a user named {username} exists"]})
        user = users.create_user(username=username, password=password)
        grant(user, role)
        detail = {"user": username, "role": role,
                  "sign_in": "password" if password else "none"}  # fmt: skip
        audit.record(actor, AuditAction.USER_CREATE, detail=detail, request_id=request_id)
    return user


def set_active(actor, user_id: int, active: bool, request_id: str = ""):
    """Deactivate or reactivate a user. An admin may not deactivate themselves: the console
    would be left without the admin who could undo it."""
    with transaction.atomic():
        user = get_user_model().objects.select_for_update().filter(pk=user_id).first()
        if user is None:
            raise NotFound(f"no user {user_id}")
        if not active and user.pk == getattr(actor, "pk", None):
            raise ActionError("you cannot deactivate yourself; another admin can")
        if user.is_active != active:
            user.is_active = active
            user.save(update_fields=["is_active"])
            action = AuditAction.USER_ACTIVATE if active else AuditAction.USER_DEACTIVATE
            audit.record(actor, action, detail={"user": user.get_username()},
                         request_id=request_id)  # fmt: skip
    return user
