"""First-run set-up: the first admin account, created once, its password shown once."""

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from console.env import raw


def ensure_admin(username: str = "admin") -> str | None:
    """Create the first admin if there is none; returns a generated password, else None."""
    User = get_user_model()
    if (
        User.objects.filter(is_superuser=True).exists()
        or User.objects.filter(groups__name="admin").exists()
    ):
        return None
    password = raw("DLQ_ADMIN_PASSWORD")
    generated = None
    if not password:
        password = generated = secrets.token_urlsafe(12)
    user = User.objects.create_superuser(username=username, email="", password=password)
    user.groups.add(Group.objects.get(name="admin"))
    return generated
