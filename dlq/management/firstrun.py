"""First-run set-up: the first admin account, created once, its password shown once."""

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from console.env import raw
from dlq.broker import mgmt, names
from dlq.health import drained

SHOWN = 10  # queue names listed per vhost

WHAT_DLQ_QUEUES_IS = (
    "DLQ_QUEUES names the parking queues the console drains: it takes every message OUT of"
    " them and keeps it until an operator acts. Never point it at a work queue or a retry"
    " queue (a glob such as orders.* matches the work queue orders.created and"
    " orders.retry too): their messages would vanish into the console."
)


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


def drained_lines() -> list[str]:
    """What DLQ_QUEUES is and what it matches on the broker now, per vhost (the banner of
    `make run` and the end of `dlq_demo`)."""
    lines = [f"DLQ_QUEUES = {','.join(settings.DLQ_QUEUES)} (the queues the console drains:"
             " it takes every message out of them)"]  # fmt: skip
    try:
        matched = drained.matched_now()
    except mgmt.ManagementError as e:
        return [*lines, f"  which queues it matches is unknown: {e}"]
    for vhost, listed in matched.items():
        if why := names.unstorable(vhost):
            lines.append(f"  cannot drain vhost {ascii(vhost)}: {why}")
            continue
        queues = [q for q in listed if not names.unstorable(q)]
        more = f" and {len(queues) - SHOWN} more" if len(queues) > SHOWN else ""
        if queues:
            lines.append(f"  drains in vhost {vhost}: "
                         f"{', '.join(queues[:SHOWN])}{more}")  # fmt: skip
        for queue in listed:
            if why := names.unstorable(queue):
                lines.append(f"  cannot drain {ascii(queue)} in vhost {vhost}: {why}")
    if not matched:
        lines.append("  no queue matches yet: one that matches later is drained within 30 s")
    return lines
