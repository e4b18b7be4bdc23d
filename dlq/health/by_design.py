"""Queues the topology checks leave out because they are fine as they are, and why.

A page of warnings nobody needs to act on hides the one that matters, so these are not
warned about, only counted (the page says how many and why):
- the console's own queues: Celery's (its default queue, the workers' `*.celery.pidbox`
  and `celeryev.*` queues, in Celery's vhost) and the drainers' ack ledgers;
- private queues: exclusive, auto-delete or server-named (`amq.*`): a consumer's own, gone
  with it;
- queues with no dead-letter exchange that must not have one: parking queues (drained by
  the console, or where a dead-letter exchange of the vhost leads: the end of the chain),
  and framework endpoints whose `<queue>_error` queue is drained (MassTransit and
  NServiceBus move a failed message there themselves; their consumers never reject).
"""

from django.conf import settings

from dlq.broker import amqp, mgmt, names
from dlq.models import DrainedQueue

LEDGER_PREFIX = "dlq-drain-acks."  # the drainers' own bookkeeping queues (dlq/drain/ledger.py)
CELERY_SUFFIXES = (".celery.pidbox",)  # a worker's remote-control queue ("NODE.celery.pidbox")
CELERY_PREFIXES = ("celeryev.",)  # a worker's or a monitor's event queue

# Why a queue was left out, in the page's words (its count goes after each).
LEFT_OUT = {
    "parking": "parking queues with no dead-letter exchange, which must not dead-letter further",
    "framework": "framework endpoints whose _error queue the console drains (the framework"
    " moves failures there itself)",
    "console": "the console's own queues (Celery's and the drainers' ledgers)",
    "private": "private queues (exclusive, auto-delete or server-named)",
}


def skipped(vhost: str, queue: dict) -> str:
    """Why no check applies to the queue at all (a LEFT_OUT key), or ""."""
    name = queue["name"]
    if name.startswith(LEDGER_PREFIX) or _celerys(vhost, name):
        return "console"
    if queue.get("exclusive") or queue.get("auto_delete") or name.startswith("amq."):
        return "private"
    return ""


def _celerys(vhost: str, name: str) -> bool:
    """One of the console's Celery queues: only in the vhost of its own broker, when that is
    RabbitMQ (another application's Celery queue is that application's concern)."""
    url = settings.CELERY_BROKER_URL.split(";")[0]
    if not url.startswith(("amqp:", "amqps:")) or amqp.vhost_of(url) != vhost:
        return False
    return (
        name == settings.CELERY_TASK_DEFAULT_QUEUE
        or name.endswith(CELERY_SUFFIXES)
        or name.startswith(CELERY_PREFIXES)
    )


def dead_letter_exchange(queue: dict) -> str | None:
    """The queue's dead-letter exchange (argument or policy), None for none. "" is a real
    one: the default exchange, routed by the dead-letter routing key."""
    arguments = queue.get("arguments") or {}
    policy = queue.get("effective_policy_definition") or {}
    if "x-dead-letter-exchange" not in arguments and "dead-letter-exchange" not in policy:
        return None
    return str(_setting(queue, "x-dead-letter-exchange", "dead-letter-exchange"))


def without_dlx(vhost: str, queues: list[dict], drained: list[names.QueuePattern]):
    """A function telling why a queue of `vhost` with no dead-letter exchange needs none (a
    LEFT_OUT key), or "". `queues` are the vhost's, `drained` the DLQ_QUEUES patterns; a
    queue the console has drained counts too (the patterns may have changed since). The
    dead-letter exchanges' bindings are asked for only once a queue needs them."""
    known = set(DrainedQueue.objects.filter(vhost=vhost).values_list("name", flat=True))
    present = {queue["name"] for queue in queues}
    targets: set[str] | None = None

    def parking(name: str) -> bool:
        return name in known or names.matches(drained, vhost, name)

    def why(name: str) -> str:
        nonlocal targets
        if parking(name):
            return "parking"
        if f"{name}_error" in present and parking(f"{name}_error"):
            return "framework"
        if targets is None:
            targets = _dead_letter_targets(vhost, queues)
        return "parking" if name in targets else ""

    return why


def _dead_letter_targets(vhost: str, queues: list[dict]) -> set[str]:
    """The queues a dead-letter exchange of the vhost leads to: those bound to it, or the
    queue a default-exchange DLX's routing key names. A queue with a message TTL is left
    aside: its dead letters are a delay or retry loop going back to work, and the queue
    they go back to is a work queue. One hop: a dead-letter exchange bound to another
    exchange is rare, and that one's queues are usually drained anyway."""
    targets, exchanges = set(), set()
    for queue in queues:
        dlx = dead_letter_exchange(queue)
        if dlx is None or _setting(queue, "x-message-ttl", "message-ttl") is not None:
            continue
        if dlx == "":
            key = _setting(queue, "x-dead-letter-routing-key", "dead-letter-routing-key")
            targets.update([str(key)] if key else [])  # none: the message's own key
        else:
            exchanges.add(dlx)
    for exchange in sorted(exchanges):
        for binding in mgmt.exchange_bindings(vhost, exchange):
            if binding.get("destination_type") == "queue":
                targets.add(str(binding.get("destination")))
    return targets


def _setting(queue: dict, argument: str, policy_key: str):
    arguments = queue.get("arguments") or {}
    policy = queue.get("effective_policy_definition") or {}
    return arguments[argument] if argument in arguments else policy.get(policy_key)
