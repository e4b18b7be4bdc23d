"""The three roles of the contract, as Django groups: viewer < operator < admin."""

from django.core.exceptions import PermissionDenied

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)
_RANK = {role: rank for rank, role in enumerate(ROLES, start=1)}


def role_of(user) -> str | None:
    """The highest role a user holds; superusers are admins; None for anyone else."""
    if not user or not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser:
        return ADMIN
    cached = getattr(user, "_dlq_role", False)
    if cached is not False:
        return cached
    names = set(user.groups.values_list("name", flat=True))
    held = [role for role in ROLES if role in names]
    user._dlq_role = max(held, key=_RANK.__getitem__) if held else None
    return user._dlq_role


def has_role(user, needed: str) -> bool:
    role = role_of(user)
    return role is not None and _RANK[role] >= _RANK[needed]


def require_role(user, needed: str) -> None:
    if not has_role(user, needed):
        raise PermissionDenied(f"this needs the {needed} role")
