"""Where alert webhooks entered in the console may go: not into the console's own network.

An admin types a Slack or webhook URL; without a check, "test" would make the console post
to cloud metadata (169.254.169.254), a database port on loopback, or any private address.
So a destination's name is resolved and every address it resolves to is checked: loopback,
private, link-local, shared, reserved and other non-global addresses are refused unless they
lie in DLQ_ALERT_ALLOWED_NETS. The check runs when a channel is saved and again when each
alert is sent, and the connection then goes to the address that was checked (pinned), so a
DNS answer that changes between the check and the connect cannot slip through.

Destinations from the configuration (DLQ_TELEGRAM_API_URL) are the operator's own and are
not checked.
"""

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from dlq.alerts.transports import Refused

__all__ = ["Refused", "check_url", "pinned_address"]


def check_url(url: str) -> None:
    """When a channel is saved: refuse a URL whose host resolves to an internal address. A
    name that does not resolve now is let through; the check before each send decides."""
    parts = urlsplit(url)
    try:
        addresses = _resolve(parts.hostname or "", parts.port or _default_port(parts.scheme))
    except OSError:
        return
    _allowed(parts.hostname or "", addresses)


def pinned_address(host: str, port: int) -> str:
    """When an alert is sent: the address to connect to, every one of the host's checked."""
    try:
        addresses = _resolve(host, port)
    except OSError:
        raise OSError(f"cannot resolve the destination's host name {host!r}") from None
    _allowed(host, addresses)
    return addresses[0]


# IPv6 ranges that carry an IPv4 address a gateway reaches for us: NAT64 (RFC 6052, 8215)
# and the deprecated IPv4-compatible form. Python's is_global calls them global.
TRANSLATED = [ipaddress.ip_network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48", "::/96")]


def _allowed(host: str, addresses: list[str]) -> None:
    for address in addresses:
        for ip in _meant(ipaddress.ip_address(address)):
            if not ip.is_global and not any(ip in n for n in settings.DLQ_ALERT_ALLOWED_NETS):
                raise Refused(
                    f"{host} resolves to {ip}, an internal address: alert destinations must be"
                    " public, or inside DLQ_ALERT_ALLOWED_NETS"
                )


def _meant(ip) -> list:
    """The address, and any IPv4 address it stands for (mapped, 6to4, Teredo, NAT64)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return [ip]
    if ip.ipv4_mapped:
        return [ip.ipv4_mapped]
    found = [ip]
    if ip.sixtofour:
        found.append(ip.sixtofour)
    if ip.teredo:
        found.extend(ip.teredo)
    if any(ip in net for net in TRANSLATED):
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def _resolve(host: str, port: int) -> list[str]:
    if not host:
        raise OSError("no host")
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in found))  # in order, once each


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80
