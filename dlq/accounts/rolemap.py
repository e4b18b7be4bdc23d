r"""Roles from an identity provider's or a proxy's groups: `GROUP=ROLE,...`
(DLQ_OIDC_ROLE_MAP, DLQ_AUTH_PROXY_ROLE_MAP). The highest mapped role wins; a user with no
mapped group gets none, and is refused rather than made a viewer.

Items are separated by commas; a group that holds a comma itself (an LDAP DN such as
`cn=ops,ou=groups,dc=example`) writes it `\,`. A group may hold `=`: the last one in an item
separates the role. Group names match exactly, case included.
"""

import re
from collections.abc import Iterable

from dlq.accounts.roles import ROLES, rank

MAX_GROUPS = 1000  # what is read of one user's groups; more is an IdP misconfiguration
MAX_GROUP_CHARS = 1000
_ITEM_SEPARATOR = re.compile(r"(?<!\\),")


class RoleMapError(ValueError):
    pass


def parse(text: str) -> dict[str, str]:
    """{group: role}; RoleMapError says what is wrong (the caller names the variable)."""
    mapping: dict[str, str] = {}
    if not text.strip():
        return mapping
    for item in _ITEM_SEPARATOR.split(text):
        if not item.strip():
            raise RoleMapError(f"has an empty item: {text!r}")
        group, sep, role = item.replace("\\,", ",").rpartition("=")
        group, role = group.strip(), role.strip()
        if not sep or role not in ROLES:
            raise RoleMapError(
                f"{item.strip()!r} is not GROUP=ROLE with ROLE one of {', '.join(ROLES)} "
                "(a comma inside a group is written \\,)"
            )
        if not group:
            raise RoleMapError(f"an item has no group before '={role}'")
        if mapping.get(group, role) != role:
            raise RoleMapError(f"group {group!r} is mapped to both {mapping[group]} and {role}")
        mapping[group] = role
    return mapping


def groups_from(value) -> list[str]:
    """A groups claim or header as a list of names: a list of strings, or one string.
    Anything else (numbers, objects) names no group."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        return []
    return [g for g in value[:MAX_GROUPS] if isinstance(g, str) and 0 < len(g) <= MAX_GROUP_CHARS]


def role_for(groups: Iterable[str], mapping: dict[str, str]) -> str | None:
    roles = [mapping[g] for g in groups if g in mapping]
    return max(roles, key=rank) if roles else None
