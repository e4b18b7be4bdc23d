"""Strict settings from the environment.

Every helper takes a default, so the console runs with no configuration at all, and
rejects junk with an error that names the variable: a typo must stop the process at
start-up, not quietly turn a feature off.
"""

import ipaddress
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def raw(name: str) -> str | None:
    """The value of NAME, or of the file named by NAME_FILE (for secrets)."""
    value = os.environ.get(name)
    file_name = os.environ.get(f"{name}_FILE")
    if value is not None and file_name:
        raise ImproperlyConfigured(f"{name} and {name}_FILE are both set; choose one")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as e:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {file_name!r}: {e}") from e
    return value


def env_str(name: str, default: str) -> str:
    value = raw(name)
    return default if value is None or value == "" else value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(name, default).strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def env_bool(name: str, default: bool) -> bool:
    value = raw(name)
    if value is None or value == "":
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use true or false)")


def env_int(name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
    value = raw(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a whole number") from None
    if number < minimum or (maximum is not None and number > maximum):
        bounds = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
        raise ImproperlyConfigured(f"{name}={number} is out of range ({bounds})")
    return number


def env_float(name: str, default: float, minimum: float = 0.0) -> float:
    value = raw(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number") from None
    if not number >= minimum:  # also rejects NaN
        raise ImproperlyConfigured(f"{name}={value!r} must be >= {minimum}")
    return number


def env_list(name: str, default: str) -> list[str]:
    items = [item.strip() for item in env_str(name, default).split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name} has an empty item: {env_str(name, default)!r}")
    return items


def env_networks(name: str, default: str) -> list:
    """Comma-separated networks in CIDR notation ("10.0.0.0/8,::1/128"), or "none"."""
    if env_str(name, default).lower() == "none":
        return []
    networks = []
    for item in env_list(name, default):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r} is not a network (CIDR)") from None
    return networks


def env_url(name: str, default: str, schemes: tuple[str, ...]) -> str:
    value = env_str(name, default)
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in schemes or not rest:
        raise ImproperlyConfigured(
            f"{name}={_mask(value)!r} is not a URL with scheme {' or '.join(schemes)}"
        )
    return value


def env_link_template(name: str, default: str, placeholder: str) -> str:
    """An http(s) URL with PLACEHOLDER in it, for links out of the console ("" is none)."""
    value = env_str(name, default).strip()
    if not value:
        return ""
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest or rest[0] in "/?#":
        raise ImproperlyConfigured(
            f"{name}={_mask(value)!r} is not a URL with scheme http or https"
        )
    if placeholder not in value:
        raise ImproperlyConfigured(f"{name}={_mask(value)!r} does not contain {placeholder}")
    return value


def env_urls(name: str, default: str, schemes: tuple[str, ...]) -> str:
    """Comma-separated URLs (the nodes of one cluster), each checked; returned as given."""
    value = env_str(name, default)
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name} has an empty item: {_mask(value)!r}")
    for item in items:
        scheme, sep, rest = item.partition("://")
        if not sep or scheme not in schemes or not rest:
            raise ImproperlyConfigured(
                f"{name}: {_mask(item)!r} is not a URL with scheme {' or '.join(schemes)}"
            )
    return ",".join(items)


def env_patterns(name: str, default: str) -> list[str]:
    """Queue patterns, QUEUE or VHOST/QUEUE (dlq/broker/names.py), checked at start-up."""
    from dlq.broker import names  # pure Python; the settings import nothing else of dlq

    items = env_list(name, default)
    for item in items:
        try:
            names.parse(item, "/")
        except names.PatternError as e:
            raise ImproperlyConfigured(f"{name}: {e}") from None
    return items


def env_role_map(name: str) -> dict[str, str]:
    """GROUP=ROLE,... (dlq/accounts/rolemap.py), checked at start-up; {} when unset."""
    from dlq.accounts import rolemap  # pure Python, like names above

    try:
        return rolemap.parse(env_str(name, ""))
    except rolemap.RoleMapError as e:
        raise ImproperlyConfigured(f"{name}: {e}") from None


def env_header(name: str) -> str:
    """An HTTP request header's name ("X-Forwarded-User") as Django's META key
    ("HTTP_X_FORWARDED_USER"); "" when unset."""
    value = env_str(name, "").strip()
    if value and not all(c.isalnum() or c == "-" for c in value):
        raise ImproperlyConfigured(f"{name}={value!r} is not a header name (letters, digits, -)")
    return "HTTP_" + value.upper().replace("-", "_") if value else ""


def _mask(url: str) -> str:
    """Hide a password in a URL so an error message never prints it."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in creds:
        return url
    return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
