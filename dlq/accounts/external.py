"""A sign-in someone else vouched for (an OpenID Connect provider, a trusted proxy): find or
make the console user linked to that identity, and give it the role its groups map to, anew
at every sign-in.

The link is the identity (source, issuer, subject), never a user name: an IdP account named
"admin" gets a user of its own, not the local admin. A user whose groups map to no role is
refused, and a user who had a role loses it there and then, so their API tokens stop working
(tokens act with their user's role, dlq/api/auth.py).
"""

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from dlq.accounts import rolemap
from dlq.accounts.roles import grant
from dlq.models import Identity
from dlq.text import clean

NAME_LIMIT = 150  # Django's user name length
SHOWN_GROUPS = 50  # what an audit row and the refusal page keep of a user's groups


@dataclass(frozen=True)
class Outcome:
    user: object | None  # None: refused
    role: str | None
    groups: list[str]
    display_name: str
    disabled: bool = False  # refused because an admin deactivated the user


def sign_in(source: str, issuer: str, subject: str, username: str, display_name: str,
            groups: list[str], role_map: dict[str, str]) -> Outcome:  # fmt: skip
    try:
        return _sign_in(source, issuer, subject, username, display_name, groups, role_map)
    except IntegrityError:  # the same identity's first sign-in in two tabs at once
        return _sign_in(source, issuer, subject, username, display_name, groups, role_map)


def _sign_in(source, issuer, subject, username, display_name, groups, role_map) -> Outcome:
    role = rolemap.role_for(groups, role_map)
    display_name = clean(display_name, 255)
    with transaction.atomic():
        identity = (
            Identity.objects.select_for_update()
            .select_related("user")
            .filter(source=source, issuer=issuer, subject=subject)
            .first()
        )
        if identity is None and role is None:
            return Outcome(None, None, groups, display_name)  # no user made for a refusal
        if identity is None:
            user = get_user_model().objects.create_user(_free_name(username, source))
            identity = Identity(user=user, source=source, issuer=issuer, subject=subject)
        user = identity.user
        if user.is_superuser:  # roles of linked users come from their groups alone
            user.is_superuser = False
            user.save(update_fields=["is_superuser"])
        grant(user, role)
        identity.role = role or ""
        identity.display_name = display_name
        identity.groups_json = json.dumps(groups[:SHOWN_GROUPS])
        if role is not None:
            identity.last_sign_in_at = datetime.now(UTC)
        identity.save()
    if not user.is_active:
        return Outcome(None, role, groups, display_name, disabled=True)
    return Outcome(user if role is not None else None, role, groups, display_name)


def audit_detail(source: str, issuer: str, subject: str, outcome: Outcome, address: str) -> dict:
    detail = {"via": source, "subject": subject, "name": outcome.display_name,
              "groups": outcome.groups[:SHOWN_GROUPS], "role": outcome.role or "",
              "address": address}  # fmt: skip
    if outcome.disabled:
        detail["disabled"] = True
    if issuer:
        detail["issuer"] = issuer
    return detail


def _free_name(hint: str, source: str) -> str:
    """The hint as a user name if no one has it; else the hint marked with its source,
    numbered if need be. Never an existing user's name."""
    users = get_user_model().objects
    base = clean(hint, NAME_LIMIT - 12) or "user"
    for candidate in [base, f"{base}~{source}"] + [f"{base}~{source}{n}" for n in range(2, 100)]:
        if not users.filter(username=candidate).exists():
            return candidate
    raise ValueError(f"no free user name for {base!r}")
