"""A small client for RabbitMQ's management HTTP API (queue discovery, depths, bindings)."""

import base64
import json
import urllib.error
import urllib.request
from urllib.parse import quote, unquote, urlsplit

from django.conf import settings


class ManagementError(Exception):
    """The management API could not be reached or answered with an error."""


# The node of each DLQ_MANAGEMENT_URL setting that answered last: the next request begins
# there, so a dead or hung node costs one timeout, not one per request.
_last_good: dict[str, int] = {}


def _request(path: str, timeout: float = 5.0):
    """GET a path from the first node of DLQ_MANAGEMENT_URL that answers (one cluster's
    nodes, comma-separated); an HTTP error is the cluster's answer, not a dead node."""
    setting = settings.DLQ_MANAGEMENT_URL
    bases = [u.strip() for u in setting.split(",") if u.strip()]
    first = _last_good.get(setting, 0) % len(bases)
    unreachable = ""
    for index in [*range(first, len(bases)), *range(first)]:
        try:
            found = _request_node(bases[index], path, timeout)
        except _Unreachable as e:
            unreachable = str(e)
            continue
        _last_good[setting] = index
        return found
    raise ManagementError(f"management API unreachable: {unreachable}")


class _Unreachable(Exception):
    pass


def _request_node(url: str, path: str, timeout: float):
    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"
    request = urllib.request.Request(base + parts.path.rstrip("/") + path)
    if parts.username:
        creds = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(creds).decode())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise ManagementError(f"management API answered {e.code} for {path}") from None
    except ValueError as e:
        raise ManagementError(f"management API answered what is not JSON: {e}") from None
    except OSError as e:
        raise _Unreachable(str(e)) from None


def list_vhosts() -> list[str]:
    """The vhosts the console's user can see."""
    found = _request("/api/vhosts?columns=name")
    if not isinstance(found, list):
        return []
    return [v["name"] for v in found if isinstance(v, dict) and isinstance(v.get("name"), str)]


def list_queues(vhost: str) -> list[dict]:
    """Queues of a vhost: name, type, arguments, messages (ready + unacked)."""
    cols = (
        "name,type,arguments,messages,messages_ready,consumers,durable,"
        "state,node,leader,members,online"  # where it lives: dlq/health/cluster.py
    )
    found = _request(f"/api/queues/{quote(vhost, safe='')}?columns={cols}")
    return found or []


def _segment(name: str) -> str:
    """A name as one path segment: "." and ".." would be read as relative paths."""
    quoted = quote(name, safe="")
    return quoted.replace(".", "%2E") if name in (".", "..") else quoted


def _one(path: str) -> dict | None:
    found = _request(path)
    return found if isinstance(found, dict) else None


def get_queue(vhost: str, name: str) -> dict | None:
    if not name:
        return None  # "" is no queue's name; the path would list them all
    return _one(f"/api/queues/{_segment(vhost)}/{_segment(name)}")


def exchange_bindings(vhost: str, exchange: str) -> list[dict]:
    """Bindings whose source is the exchange (its destinations: queues and exchanges)."""
    path = f"/api/exchanges/{_segment(vhost)}/{_segment(exchange)}/bindings/source"
    found = _request(path)
    return [b for b in found if isinstance(b, dict)] if isinstance(found, list) else []


def get_exchange(vhost: str, exchange: str) -> dict | None:
    if not exchange:
        exchange = "amq.default"  # the default exchange, as the management API names it
    return _one(f"/api/exchanges/{_segment(vhost)}/{_segment(exchange)}")


def queues_with_policies(vhost: str) -> list[dict]:
    """Queues with what decides their limits (arguments and the effective policy) and where
    they live (node, leader, members online: dlq/health/cluster.py)."""
    cols = (
        "name,type,arguments,messages,message_bytes,durable,auto_delete,exclusive,consumers,"
        "policy,effective_policy_definition,state,node,leader,members,online"
    )
    found = _request(f"/api/queues/{_segment(vhost)}?columns={cols}")
    return [q for q in found if isinstance(q, dict)] if isinstance(found, list) else []


def list_consumers(vhost: str) -> list[dict]:
    """The consumers of a vhost's queues: queue, consumer_tag, channel_details (whose
    connection_name is the broker's name of the connection, not the client's)."""
    found = _request(f"/api/consumers/{_segment(vhost)}")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def client_names(vhost: str) -> dict[str, str]:
    """The vhost's connections: the broker's name of each -> the name its client gave it."""
    found = _request(f"/api/vhosts/{_segment(vhost)}/connections?columns=name,user_provided_name")
    return {
        c["name"]: str(c.get("user_provided_name") or "")
        for c in found if isinstance(c, dict) and isinstance(c.get("name"), str)
    } if isinstance(found, list) else {}  # fmt: skip


def list_nodes() -> list[dict]:
    """The cluster's nodes as the answering node sees them: name, running."""
    found = _request("/api/nodes?columns=name,running")
    return [n for n in found if isinstance(n, dict)] if isinstance(found, list) else []


def amqp_listeners() -> list[dict]:
    """Every node's AMQP listeners: node, ip_address, port (to name a drainer's node)."""
    found = _one("/api/overview?columns=listeners") or {}
    listeners = found.get("listeners")
    return [
        x
        for x in listeners or ()
        if isinstance(x, dict) and x.get("protocol") in ("amqp", "amqp/ssl")
    ]


def broker_version() -> str:
    found = _one("/api/overview?columns=rabbitmq_version")
    return str((found or {}).get("rabbitmq_version") or "")
