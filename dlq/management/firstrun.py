"""First-run set-up: the first admin account, created once, its password shown once."""

import secrets

from django.conf import settings
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


def set_up() -> list[str]:
    """Migrate and make sure an admin exists; the lines to show the operator (once)."""
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if not settings.DLQ_LOCAL_LOGIN:  # a password nobody could use is no first admin
        return ["Local passwords are off (DLQ_LOCAL_LOGIN=false): sign in through your identity"
                " provider or sign-in proxy; roles come from your groups"]  # fmt: skip
    password = ensure_admin()
    if not password:
        return []
    return [
        f"First admin created: user 'admin', password '{password}'",
        "(shown once; set DLQ_ADMIN_PASSWORD to choose it)",
    ]
