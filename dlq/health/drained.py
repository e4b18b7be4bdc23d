"""Drained queues that look like work queues.

The console takes every message OUT of each queue DLQ_QUEUES matches and keeps it until an
operator acts. A glob easily matches more than parking queues (`orders.*` drains the work
queue `orders.created` and the retry queue `orders.retry` too), and nothing fails: the
service's messages just vanish into the console, and a replay to such a queue comes straight
back as an arrival with no death. A drained queue is suspect when:

- it has consumers besides the console's drainer (told apart by its consumer tags and, for
  drainers older than those, its connections' names: dlq/broker/names.py DRAINER): a service
  works from it, and the console takes its messages away;
- it has a dead-letter exchange or a message TTL of its own (queue argument or policy): its
  messages are meant to move on (a delay or retry queue), a parking queue's stay;
- recent arrivals in it had no death: neither x-death nor a framework's failure headers (a
  service publishes into it), or they came back from a console replay (a loop).

The replay side (a replay whose route reaches a drained queue is refused unless overridden)
is dlq/actions/routes.py.
"""

from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from dlq.broker import amqp, mgmt, names
from dlq.health import by_design, topology
from dlq.models import Message

SAMPLE = 500  # the newest arrivals of the last day looked at, across every queue
RECENT = timedelta(days=1)
CONSOLE_TAG = f"{names.DRAINER}."
CONSOLE_CONNECTION = f"{names.DRAINER} "


@dataclass
class Suspect:
    vhost: str
    queue: str
    reasons: list[str] = field(default_factory=list)


def check(vhosts: list[str] | None = None) -> list[Suspect]:
    """The drained queues of `vhosts` (default: topology.checked_vhosts()) that look like
    work queues, each with why; raises mgmt.ManagementError if the API is down."""
    drained = names.parse_all(settings.DLQ_QUEUES, amqp.vhost_of(settings.DLQ_BROKER_URL))
    arrivals = deathless_arrivals()
    found = []
    for vhost in topology.checked_vhosts() if vhosts is None else vhosts:
        queues = [
            q for q in mgmt.queues_with_policies(vhost)
            if _drainable(q) and names.matches(drained, vhost, q["name"])
        ]  # fmt: skip
        others = foreign_consumers(vhost, queues)
        for queue in sorted(queues, key=lambda q: q["name"]):
            key = (vhost, queue["name"])
            reasons = [
                *_consumers_reason(others.get(queue["name"], [])),
                *_moves_on_reason(queue),
                *_arrivals_reason(arrivals.get(key)),
            ]
            if reasons:
                found.append(Suspect(vhost, queue["name"], reasons))
    return found


def report() -> tuple[list[Suspect], str]:
    """check(), or no suspects and why the management API could not be asked."""
    try:
        return check(), ""
    except mgmt.ManagementError as e:
        return [], str(e)


def context() -> dict:
    """What the overview's and the topology page's _drained.html include shows."""
    suspects, error = report()
    return {"drained_suspects": suspects, "drained_error": error}


def matched_now() -> dict[str, list[str]]:
    """What DLQ_QUEUES matches on the broker now, as the drainer resolves it: vhost -> the
    queues it matches there (vhosts with none left out; names.unstorable says which of them
    it cannot drain); raises mgmt.ManagementError."""
    patterns = names.parse_all(settings.DLQ_QUEUES, amqp.vhost_of(settings.DLQ_BROKER_URL))
    vhosts = {p.vhost for p in patterns if not names.is_glob(p.vhost)}
    if any(names.is_glob(p.vhost) for p in patterns):  # against the vhosts there are
        vhosts |= {v for v in mgmt.list_vhosts() if any(p.matches_vhost(v) for p in patterns)}
    found = {}
    for vhost in sorted(vhosts):
        queues = [q for q in mgmt.list_queues(vhost) if isinstance(q, dict) and "name" in q]
        matched = [
            q["name"] for q in queues if _drainable(q) and names.matches(patterns, vhost, q["name"])
        ]
        if matched:
            found[vhost] = sorted(matched)
    return found


def _drainable(queue: dict) -> bool:
    """As the drainer sees it (dlq/drain/queues.py): no exclusive queue, no ledger."""
    return not queue.get("exclusive") and not queue["name"].startswith(by_design.LEDGER_PREFIX)


# --- consumers ----------------------------------------------------------------------------


def foreign_consumers(vhost: str, queues: list[dict]) -> dict[str, list[str]]:
    """Queue name -> who else consumes it (the client's connection name, else the broker's)."""
    if not any(isinstance(q.get("consumers"), int) and q["consumers"] > 0 for q in queues):
        return {}  # nobody consumes: no need to ask who
    wanted = {q["name"] for q in queues}
    others = [
        c for c in mgmt.list_consumers(vhost)
        if (c.get("queue") or {}).get("name") in wanted
        and not str(c.get("consumer_tag", "")).startswith(CONSOLE_TAG)
    ]  # fmt: skip
    if not others:
        return {}
    clients = mgmt.client_names(vhost)  # drainers from before their tags: by connection name
    found: dict[str, list[str]] = {}
    for consumer in others:
        connection = str((consumer.get("channel_details") or {}).get("connection_name") or "")
        client = clients.get(connection, "")
        if not client.startswith(CONSOLE_CONNECTION):
            found.setdefault(consumer["queue"]["name"], []).append(client or connection)
    return found


def _consumers_reason(others: list[str]) -> list[str]:
    if not others:
        return []
    who = ", ".join(sorted(set(others))[:3]) + (", ..." if len(set(others)) > 3 else "")
    count = f"{len(others)} consumer{'s' if len(others) > 1 else ''}"
    return [
        f"{count} besides the console's drainer ({who}): a service works from this queue,"
        " and the console takes its messages away from it"
    ]


# --- its own dead-letter exchange or TTL --------------------------------------------------


def _own(queue: dict, argument: str, policy_key: str):
    """The queue argument, else the effective policy's value (None for neither)."""
    arguments = queue.get("arguments") or {}
    policy = queue.get("effective_policy_definition") or {}
    if argument in arguments:
        return arguments[argument], "queue argument"
    if policy_key in policy:
        return policy[policy_key], f"policy {queue.get('policy') or ''}".strip()
    return None


def _moves_on_reason(queue: dict) -> list[str]:
    settings_found = []
    dlx = _own(queue, "x-dead-letter-exchange", "dead-letter-exchange")
    if dlx is not None:
        exchange = f"'{dlx[0]}'" if dlx[0] else "the default exchange"
        settings_found.append(f"a dead-letter exchange ({exchange}, {dlx[1]})")
    ttl = _own(queue, "x-message-ttl", "message-ttl")
    if ttl is not None:
        settings_found.append(f"a message TTL ({ttl[0]} ms, {ttl[1]})")
    if not settings_found:
        return []
    return [
        f"{' and '.join(settings_found)} of its own: a delay or retry queue, whose messages"
        " are meant to move on (a parking queue keeps them); the console takes them out first"
    ]


# --- arrivals with no death ---------------------------------------------------------------


def deathless_arrivals(now=None) -> dict[tuple[str, str], dict]:
    """Per (vhost, queue), of the newest SAMPLE arrivals of the last day: how many were
    looked at (`seen`), how many had no death (`deathless`) and how many of those came back
    from a console replay (`replayed`). One query on the received_at index."""
    since = (now or timezone.now()) - RECENT
    rows = (
        Message.objects.filter(received_at__gte=since)
        .order_by("-received_at", "-id")
        .values_list("vhost", "queue", "death_count", "death_reason", "failed_queue",
                     "exception_type", "lineage_id")[:SAMPLE]
    )  # fmt: skip
    found: dict[tuple[str, str], dict] = {}
    for vhost, queue, deaths, reason, failed, exception, lineage in rows:
        tally = found.setdefault((vhost, queue), {"seen": 0, "deathless": 0, "replayed": 0})
        tally["seen"] += 1
        # A framework that moved the message there names where and why it failed (a
        # MassTransit _error queue has no x-death); a replay keeps those headers, its
        # lineage tells it.
        said_why = bool(reason or failed or exception)
        if deaths == 0 and (lineage is not None or not said_why):
            tally["deathless"] += 1
            tally["replayed"] += lineage is not None
    return found


def _arrivals_reason(tally: dict | None) -> list[str]:
    if not tally or not tally["deathless"]:
        return []
    reason = (
        f"{tally['deathless']} of its {tally['seen']} newest arrivals (last day) had no death:"
        " nothing dead-lettered them, they were published into it"
    )
    if tally["replayed"]:
        reason += (
            f"; {tally['replayed']} came straight back from a console replay (a loop: the"
            " replay's route reaches this queue)"
        )
    return [reason]
