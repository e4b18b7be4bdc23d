"""What a replay sends and where: pure functions over a stored message (no I/O).

Follows shared/rabbitmq-facts.md: body bytes unchanged; properties kept but `expiration`
(the broker removed it when dead-lettering) and `user_id` (validated by the broker against
the publishing user; kept in `original-user-id`); broker-owned `x-` headers and CC/BCC
stripped; the console's lineage headers added. Symfony Messenger's SentToFailureTransportStamp
header is stripped too: with it, Symfony drops a replayed message that fails again instead of
sending it to the failure transport (dlq/messages/symfony.py).
"""

from dataclasses import dataclass

from django.conf import settings

from dlq.broker import amqp, codec, names
from dlq.broker.publisher import REPLAY_ID_HEADER, Outgoing
from dlq.messages import symfony
from dlq.models.actions import ReplayOverride

STRIPPED_HEADERS = {"x-death", "x-delivery-count", "x-acquired-count", "CC", "BCC",
                    symfony.SENT_TO_FAILURE_HEADER}  # fmt: skip
STRIPPED_PREFIXES = ("x-first-death-", "x-last-death-")
TARGETS = ("original", "failed_queue")
FRAME_OVERHEAD = 8  # frame type, channel, size and frame-end octets


class ReplayError(ValueError):
    """The replay cannot be built: no known destination, or a value the broker would refuse."""


@dataclass(frozen=True)
class Route:
    target: str  # original | failed_queue | custom
    exchange: str
    routing_key: str


def _short(value, what: str) -> str:
    if not isinstance(value, str):
        raise ReplayError(f"{what} must be a string")
    if "\x00" in value:
        raise ReplayError(f"{what} must not contain NUL")
    if len(value.encode("utf-8", "surrogatepass")) > 255:
        raise ReplayError(f"{what} is longer than 255 bytes")
    return value


def load_overrides() -> list[ReplayOverride]:
    """Every target, in id order, each with its parsed `pattern` (None for a stored pattern
    that no longer parses: it matches nothing until an admin fixes it)."""
    default = amqp.vhost_of(settings.DLQ_BROKER_URL)
    overrides = list(ReplayOverride.objects.order_by("id"))
    for override in overrides:
        try:
            override.pattern = names.parse(override.queue_pattern, default)
        except names.PatternError:
            override.pattern = None
    return overrides


def override_for(message) -> ReplayOverride | None:
    """The per-queue replay override that "original" follows for `message`, if any."""
    return _override(message, None)


def _override(message, overrides) -> ReplayOverride | None:
    # A pattern names its vhost (a bare QUEUE is in the default vhost): a target set for
    # one service's queues never redirects a namesake queue of another vhost.
    for override in load_overrides() if overrides is None else overrides:
        if override.pattern and override.pattern.matches(message.vhost, message.queue):
            return override
    return None


def resolve(message, target, overrides: list[ReplayOverride] | None = None) -> Route:
    """The exchange and routing key a replay of `message` to `target` would use.

    `overrides` (from load_overrides) saves a query per message when resolving many."""
    if target == "original":
        override = _override(message, overrides)
        if override:
            return Route("original", override.exchange, override.routing_key)
        keys = message.original_routing_keys
        if message.original_exchange is None or (message.original_exchange == "" and not keys):
            raise ReplayError(
                "the original destination is unknown (no x-death or framework headers); "
                "replay to the failed queue or name an exchange and routing key"
            )
        # Only the publish key: CC keys would fan the message out again (never send CC/BCC).
        return Route("original", message.original_exchange, keys[0] if keys else "")
    if target == "failed_queue":
        if not message.failed_queue:
            raise ReplayError("the failed queue is unknown; name an exchange and routing key")
        return Route("failed_queue", "", message.failed_queue)
    if isinstance(target, dict) and set(target) == {"exchange", "routing_key"}:
        exchange = _short(target["exchange"], "target exchange")
        routing_key = _short(target["routing_key"], "target routing_key")
        return Route("custom", exchange, routing_key)
    raise ReplayError(
        'target must be "original", "failed_queue" or {"exchange": ..., "routing_key": ...}'
    )


def route_note(message, route: Route) -> str | None:
    """What an operator should know about where `route` leads for this message."""
    if route.target != "custom" and message.death_reason == symfony.HANDLER_FAILED:
        return (
            f"Symfony Messenger sent this message to its failure transport after its handler"
            f" failed on queue {message.failed_queue!r}; a replay goes back into that queue"
            " through the default exchange, as Symfony's own retries do. The replay drops"
            " the SentToFailureTransportStamp header, so a second failure reaches the failure"
            " transport again (with the PHP serializer the stamp is in the body, which a"
            " replay never changes: see the README)."
        )
    return None


def replay_headers(message, replay_id: str, user_id=None) -> dict:
    headers = {
        key: value
        for key, value in message.headers.items()
        if key not in STRIPPED_HEADERS and not key.startswith(STRIPPED_PREFIXES)
    }
    if user_id is not None:
        headers["original-user-id"] = (
            {"type": "longstr", **user_id} if isinstance(user_id, dict) else codec.typed(user_id)
        )
    headers[REPLAY_ID_HEADER] = codec.typed(replay_id)
    headers["dlq-replay-count"] = codec.typed(message.replay_count + 1)
    headers["dlq-origin-id"] = {"type": "int64", "value": message.pk}
    return headers


def max_message_bytes(server_version: str = "") -> int:
    """The broker's default max_message_size: 128 MiB on 3.x, 16 MiB from 4.0."""
    if settings.DLQ_MAX_MESSAGE_BYTES:
        return settings.DLQ_MAX_MESSAGE_BYTES
    major = server_version.split(".", 1)[0]
    modern = major.isascii() and major.isdigit() and int(major) >= 4
    return 16 * 2**20 if modern else 128 * 2**20


def validate(properties, body: bytes, frame_max: int, max_body: int) -> None:
    """Refuse what the broker would answer by closing the channel or the connection."""
    try:
        size = amqp.header_frame_size(properties)
    except codec.AmqpValueError as e:
        raise ReplayError(str(e)) from None
    if size > frame_max - FRAME_OVERHEAD:
        raise ReplayError(
            f"properties and headers take {size} bytes; the broker's frame limit is "
            f"{frame_max - FRAME_OVERHEAD} bytes"
        )
    if len(body) > max_body:
        raise ReplayError(f"the body is {len(body)} bytes; the broker accepts at most {max_body}")


def build(message, route: Route, replay_id: str, frame_max: int = 131072,
          max_body: int = 128 * 2**20) -> Outgoing:  # fmt: skip
    """The message to publish for one replay (validated)."""
    properties = dict(message.properties)
    properties.pop("expiration", None)
    user_id = None if settings.DLQ_REPLAY_KEEP_USER_ID else properties.pop("user_id", None)
    headers = replay_headers(message, replay_id, user_id)
    try:
        props = amqp.make_properties(properties, headers)
    except (codec.AmqpValueError, TypeError) as e:
        raise ReplayError(str(e)) from None
    body = bytes(message.body)
    validate(props, body, frame_max, max_body)
    return Outgoing(replay_id, route.exchange, route.routing_key, body, props)
