"""Topology health: broker set-ups that lose messages without anyone noticing.

Checks, each a warning with its reason:
- a drained queue near its length limit: at the limit the broker drops or refuses
  messages, and nothing reaches the console;
- a work queue (DLQ_WORK_QUEUES) with no dead-letter exchange: what its consumers reject,
  and what expires or overflows, is dropped;
- a quorum queue with a delivery limit and no dead-letter exchange: a message that keeps
  failing is dropped after that many deliveries (RabbitMQ 4 sets a limit of 20 by default);
- on a cluster, a drained queue a node loss has hurt: a quorum queue with no leader or fewer
  replicas online than members, a classic queue whose node is down (dlq/health/cluster.py).

Limits come from queue arguments or the effective policy, whichever is stricter. Queues that
are fine as they are (parking queues with no dead-letter exchange, the console's own Celery
queues, private ones) are left out and counted: dlq/health/by_design.py.

Every drained vhost is checked (those of the drained queues the console knows, and the
default one), each finding naming its vhost. DLQ_QUEUES patterns are QUEUE (default vhost)
or VHOST/QUEUE; a bare DLQ_WORK_QUEUES pattern is a naming convention, so it applies in
every checked vhost (VHOST/QUEUE narrows it to one).
"""

from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings

from dlq.broker import amqp, mgmt, names
from dlq.health import by_design, cluster
from dlq.models import DrainedQueue

NEAR_FULL = 0.8
DEFAULT_DELIVERY_LIMIT_V4 = 20

# Each check in the page's words, worst first: its title, and why it matters and what fixes
# it, in one sentence.
CHECKS = {
    "unavailable": ("Unavailable", "A node loss left the queue without its node or leader:"
                    " nothing reaches it, or the console, until the nodes are back."),
    "near_full": ("Near its length limit", "At the limit the broker drops or refuses dead"
                  " letters before the console sees them: raise the queue's max-length"
                  " (argument or policy), or find why so many arrive."),
    "delivery_limit": ("Delivery limit, no dead-letter exchange", "A message that keeps"
                       " failing is dropped after its last delivery: give the queue a"
                       " dead-letter exchange leading to a queue the console drains."),
    "no_dlx": ("No dead-letter exchange", "What its consumers reject, and what expires or"
               " overflows, is dropped without a trace: give the queue a dead-letter exchange"
               " (a policy with dead-letter-exchange) leading to a queue the console drains."),
    "under_replicated": ("Replicas down", "The queue works on with fewer replicas: one more"
                         " node loss may make it unavailable; bring the nodes back."),
}  # fmt: skip


@dataclass
class Finding:
    vhost: str
    queue: str
    check: str  # a CHECKS key
    reason: str


@dataclass
class Survey:
    """What check() found, and how many queues it left out as fine, by why (by_design.LEFT_OUT
    keys); `error` says why nothing could be checked."""

    findings: list[Finding] = field(default_factory=list)
    left_out: Counter = field(default_factory=Counter)
    error: str = ""


def checked_vhosts() -> list[str]:
    """The default vhost and every vhost a drained queue is in (a vhost deleted since has
    no queues left to warn about)."""
    default = amqp.vhost_of(settings.DLQ_BROKER_URL)
    drained = DrainedQueue.objects.values_list("vhost", flat=True).distinct()
    return sorted({default, *drained})


def check(vhosts: list[str] | None = None, drained=None, work=None) -> list[Finding]:
    """Every warning in `vhosts` (default: checked_vhosts()): survey()'s findings."""
    return survey(vhosts, drained, work).findings


def survey(vhosts: list[str] | None = None, drained=None, work=None) -> Survey:
    """Every warning in `vhosts` (default: checked_vhosts()), and what was left out as fine;
    raises mgmt.ManagementError if the API is down. Patterns are parsed by
    dlq/broker/names.py (see the module's docstring for what a bare one means)."""
    default = amqp.vhost_of(settings.DLQ_BROKER_URL)
    drained = names.parse_all(drained or settings.DLQ_QUEUES, default)
    work = names.parse_all(work or settings.DLQ_WORK_QUEUES, "*")
    v4 = _major(mgmt.broker_version()) >= 4
    running = {node["name"] for node in mgmt.list_nodes() if node.get("running") is True}
    found = Survey()
    for vhost in checked_vhosts() if vhosts is None else vhosts:
        queues = sorted(mgmt.queues_with_policies(vhost), key=lambda q: q["name"])
        needs_none = by_design.without_dlx(vhost, queues, drained)
        for queue in queues:
            if why := by_design.skipped(vhost, queue):
                found.left_out[why] += 1
                continue
            is_work = names.matches(work, vhost, queue["name"])
            if is_work and not _has_dlx(queue) and (why := needs_none(queue["name"])):
                found.left_out[why] += 1
                is_work = False
            drains = names.matches(drained, vhost, queue["name"])
            found.findings += check_queue(vhost, queue, drains, is_work, v4, running or None)
    return found


def report() -> Survey:
    """survey(), or nothing found and why the management API could not be asked (or a
    pattern setting could not be read)."""
    try:
        return survey()
    except mgmt.ManagementError as e:
        return Survey(error=str(e))
    except names.PatternError as e:
        return Survey(error=f"DLQ_WORK_QUEUES: {e}")


def check_queue(
    vhost: str, queue: dict, drained: bool, work: bool, v4: bool, running: set[str] | None = None
) -> list[Finding]:
    """The queue's warnings; `running`: the cluster's running nodes, when known."""
    name, warnings = queue["name"], []
    if drained:
        warnings += _placement(vhost, queue, running)
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


def _placement(vhost: str, queue: dict, running: set[str] | None) -> list[Finding]:
    where = cluster.placement(queue, running)
    if where is None or not where.reason:
        return []
    check = "under_replicated" if where.available else "unavailable"
    return [Finding(vhost, queue["name"], check, where.reason)]


def _major(version: str) -> int:
    head = version.split(".")[0]
    return int(head) if head.isascii() and head.isdigit() else 0


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
    return by_design.dead_letter_exchange(queue) is not None


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
