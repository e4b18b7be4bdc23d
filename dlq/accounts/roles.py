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


def rank(role: str) -> int:
    return _RANK[role]


def grant(user, role: str | None) -> None:
    """Give the user exactly this role (None: no role at all), keeping groups that are not
    roles. The cached role of this user object follows."""
    from django.contrib.auth.models import Group

    held = user.groups.filter(name__in=ROLES)
    if role is None or {g.name for g in held} != {role}:
        user.groups.remove(*held)
        if role is not None:
            user.groups.add(Group.objects.get_or_create(name=role)[0])
    user._dlq_role = role


def has_role(user, needed: str) -> bool:
    role = role_of(user)
    return role is not None and _RANK[role] >= _RANK[needed]


def require_role(user, needed: str) -> None:
    if not has_role(user, needed):
        raise PermissionDenied(f"this needs the {needed} role")
