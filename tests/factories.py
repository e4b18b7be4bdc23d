"""Stored messages that look exactly like drained ones, and users for the test personas."""

import uuid
from datetime import UTC, datetime

from django.contrib.auth.models import Group, User
from django.test import Client

from dlq.accounts.tokens import create_token
from dlq.broker import amqp, codec
from dlq.drain import pending, store
from dlq.messages.ingest import Delivery, build_row
from dlq.models import Message


def _str(value: str) -> dict:
    return {"type": "longstr", "value": value}


def death_headers(
    queue: str, reason: str, exchange: str, routing_keys: list[str], at: datetime
) -> dict:
    """The headers RabbitMQ 3.13 puts on a message that died once in `queue`."""
    entry = {
        "count": {"type": "int64", "value": 1},
        "reason": _str(reason),
        "queue": _str(queue),
        "time": {"type": "timestamp", "value": int(at.timestamp())},
        "exchange": _str(exchange),
        "routing-keys": {"type": "array", "value": [_str(k) for k in routing_keys]},
    }
    return {
        "x-death": {"type": "array", "value": [{"type": "table", "value": entry}]},
        "x-first-death-queue": _str(queue),
        "x-first-death-reason": _str(reason),
        "x-first-death-exchange": _str(exchange),
    }


def make_messages(
    count: int = 1,
    *,
    queue: str = "orders.dlq",
    body: bytes = b'{"order": 1}',
    headers: dict | None = None,
    died_in: str | None = "orders",
    reason: str = "rejected",
    exchange: str = "orders.events",
    routing_key: str = "order.created",
    dlx: str = "orders.dlx",
    delivered_key: str | None = None,
    vhost: str = "/",
    received_at: datetime | None = None,
    **properties,
) -> list[Message]:
    """Store `count` copies of a dead-lettered message as the drainer would, oldest first.

    `headers` are added to the broker's death headers: plain Python values or typed JSON.
    The message died in `died_in`, published to `exchange` with `routing_key`, and reached
    the parking queue through `dlx` (with `delivered_key` when the DLX rewrote the key).
    `died_in=None`: it never died, someone published it straight into `queue`.
    """
    at = received_at or datetime.now(UTC)
    typed = death_headers(died_in, reason, exchange, [routing_key], at) if died_in else {}
    for key, value in (headers or {}).items():
        typed[key] = value if isinstance(value, dict) and "type" in value else codec.typed(value)
    props = amqp.make_properties(properties, typed)
    delivery = Delivery(queue, vhost, dlx, delivered_key or routing_key, False, props, body)
    batch = uuid.uuid4().hex
    store.store_batch(batch, "tests", [build_row(delivery, at) for _ in range(count)])
    pending.forget_batches([batch])
    return list(Message.objects.filter(drain_batch=batch).order_by("id"))


def make_message(**kwargs) -> Message:
    return make_messages(1, **kwargs)[0]


def make_user(role: str | None, **fields) -> User:
    """A user holding `role` (viewer, operator, admin) or, with None, no role at all."""
    name = f"{role or 'norole'}-{uuid.uuid4().hex[:8]}"
    user = User.objects.create_user(username=name, **fields)  # no password: quick
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def client_for(user: User, token: bool = False) -> Client:
    """A client acting as `user`: by a bearer token, or by a logged-in browser session."""
    if token:
        return Client(headers={"Authorization": f"Bearer {create_token(user)}"})
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def post(client: Client, url: str, data: dict | None = None, follow: bool = False):
    """POST as a browser does: with the CSRF token from the cookie a page has set (the login
    page sets it for anyone)."""
    client.get("/login/")
    token = client.cookies["csrftoken"].value
    return client.post(url, data or {}, headers={"X-CSRFToken": token}, follow=follow)
