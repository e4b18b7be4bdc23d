"""Topology health: broker set-ups that lose messages without anyone noticing.

Three checks, each a warning with its reason:
- a drained queue near its length limit: at the limit the broker drops or refuses
  messages, and nothing reaches the console;
- a work queue (DLQ_WORK_QUEUES) with no dead-letter exchange: what its consumers reject,
  and what expires or overflows, is dropped;
- a quorum queue with a delivery limit and no dead-letter exchange: a message that keeps
  failing is dropped after that many deliveries (RabbitMQ 4 sets a limit of 20 by default).

Limits come from queue arguments or the effective policy, whichever is stricter.

Every drained vhost is checked (those of the drained queues the console knows, and the
default one), each finding naming its vhost. DLQ_QUEUES patterns are QUEUE (default vhost)
or VHOST/QUEUE; a bare DLQ_WORK_QUEUES pattern is a naming convention, so it applies in
every checked vhost (VHOST/QUEUE narrows it to one).
"""

from dataclasses import dataclass

from django.conf import settings

from dlq.broker import amqp, mgmt, names
from dlq.models import DrainedQueue

NEAR_FULL = 0.8
DEFAULT_DELIVERY_LIMIT_V4 = 20
LEDGER_PREFIX = "dlq-drain-acks."  # the drainers' own bookkeeping queues (dlq/drain/ledger.py)


@dataclass
class Finding:
    vhost: str
    queue: str
    check: str  # near_full | no_dlx | delivery_limit
    reason: str


def checked_vhosts() -> list[str]:
    """The default vhost and every vhost a drained queue is in (a vhost deleted since has
    no queues left to warn about)."""
    default = amqp.vhost_of(settings.DLQ_BROKER_URL)
    drained = DrainedQueue.objects.values_list("vhost", flat=True).distinct()
    return sorted({default, *drained})


def check(vhosts: list[str] | None = None, drained=None, work=None) -> list[Finding]:
    """Every warning in `vhosts` (default: checked_vhosts()); raises mgmt.ManagementError
    if the API is down. Patterns are parsed by dlq/broker/names.py (see the module's
    docstring for what a bare one means)."""
    default = amqp.vhost_of(settings.DLQ_BROKER_URL)
    drained = names.parse_all(drained or settings.DLQ_QUEUES, default)
    work = names.parse_all(work or settings.DLQ_WORK_QUEUES, "*")
    v4 = _major(mgmt.broker_version()) >= 4
    found = []
    for vhost in checked_vhosts() if vhosts is None else vhosts:
        for queue in sorted(mgmt.queues_with_policies(vhost), key=lambda q: q["name"]):
            if _ignored(queue):
                continue
            is_drained = names.matches(drained, vhost, queue["name"])
            is_work = names.matches(work, vhost, queue["name"])
            found += check_queue(vhost, queue, is_drained, is_work, v4)
    return found


def report() -> tuple[list[Finding], str]:
    """check(), or no findings and why the management API could not be asked (or a
    pattern setting could not be read)."""
    try:
        return check(), ""
    except mgmt.ManagementError as e:
        return [], str(e)
    except names.PatternError as e:
        return [], f"DLQ_WORK_QUEUES: {e}"


def check_queue(vhost: str, queue: dict, drained: bool, work: bool, v4: bool) -> list[Finding]:
    name, warnings = queue["name"], []
    if drained:
        warnings += [Finding(vhost, name, "near_full", r) for r in _near_full(queue)]
    limit = _delivery_limit(queue, v4)
    if queue.get("type") == "quorum" and limit is not None and not _has_dlx(queue):
        which = "a delivery limit" if _limit_set(queue) else "RabbitMQ 4's default delivery limit"
        fails = "its first delivery" if limit == 0 else f"{limit + 1} deliveries"
        reason = (
            f"quorum queue with {which} of {limit} and no dead-letter exchange:"
            f" a message that fails {fails} is dropped"
        )
        warnings.append(Finding(vhost, name, "delivery_limit", reason))
    elif work and not drained and not _has_dlx(queue):
        reason = (
            "no dead-letter exchange: messages its consumers reject, and messages that"
            " expire or overflow, are dropped"
        )
        warnings.append(Finding(vhost, name, "no_dlx", reason))
    return warnings


def _major(version: str) -> int:
    head = version.split(".")[0]
    return int(head) if head.isascii() and head.isdigit() else 0


def _ignored(queue: dict) -> bool:
    """Consumers' private queues (exclusive, auto-delete) and the drainers' ledgers."""
    return (
        queue.get("exclusive")
        or queue.get("auto_delete")
        or queue["name"].startswith(("amq.", LEDGER_PREFIX))
    )


def _setting(queue: dict, argument: str, policy_key: str):
    """The stricter (smaller) of the queue argument and the effective policy's value."""
    numbers = _int_settings(queue, argument, policy_key)
    return min(numbers) if numbers else None


def _int_settings(queue: dict, argument: str, policy_key: str) -> list[int]:
    values = [
        (queue.get("arguments") or {}).get(argument),
        (queue.get("effective_policy_definition") or {}).get(policy_key),
    ]
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def _text_setting(queue: dict, argument: str, policy_key: str) -> str:
    arguments = queue.get("arguments") or {}
    policy = queue.get("effective_policy_definition") or {}
    return str(arguments.get(argument) or policy.get(policy_key) or "")


def _has_dlx(queue: dict) -> bool:
    # "" is a real DLX (the default exchange, routed by x-dead-letter-routing-key).
    arguments = queue.get("arguments") or {}
    policy = queue.get("effective_policy_definition") or {}
    return "x-dead-letter-exchange" in arguments or "dead-letter-exchange" in policy


def _delivery_limit(queue: dict, v4: bool) -> int | None:
    """The limit in force (redeliveries before the drop), None for none. 3.x has none unless
    set, and takes a negative one as 0; 4.x defaults to 20, and a negative limit switches it
    off. The queue argument and the policy both count."""
    values = _int_settings(queue, "x-delivery-limit", "delivery-limit")
    if not values:
        return DEFAULT_DELIVERY_LIMIT_V4 if v4 else None
    limits = [v for v in values if v >= 0] if v4 else [max(v, 0) for v in values]
    return min(limits) if limits else None


def _limit_set(queue: dict) -> bool:
    return bool(_int_settings(queue, "x-delivery-limit", "delivery-limit"))


def _near_full(queue: dict) -> list[str]:
    overflow = _text_setting(queue, "x-overflow", "overflow") or "drop-head"
    then = {
        "drop-head": "the broker drops the oldest messages",
        "reject-publish": "the broker refuses new messages (lost unless publishers confirm)",
        "reject-publish-dlx": "the broker refuses new messages and dead-letters them",
    }.get(overflow, f"overflow {overflow} applies")
    reasons = []
    for argument, policy_key, column, unit in (
        ("x-max-length", "max-length", "messages", "messages"),
        ("x-max-length-bytes", "max-length-bytes", "message_bytes", "bytes"),
    ):
        limit, held = _setting(queue, argument, policy_key), queue.get(column)
        if limit and isinstance(held, int) and held >= NEAR_FULL * limit:
            reasons.append(
                f"holds {held} of at most {limit} {unit} ({100 * held // limit}%):"
                f" at the limit {then}, silently"
            )
    return reasons
