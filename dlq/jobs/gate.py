"""The consumer gate: before a step, every queue its replays reach now must have a consumer.

The step's messages are resolved as a claim would resolve them (dlq/actions/replay.py),
one route per distinct source; the management API, in each message's vhost, says which
queues each route reaches now (dlq/actions/routes.py) and how many consumers each has. A
queue without one, a route that reaches no queue, a vhost the console's user may not open,
and a management API that does not answer each keep the job waiting, in words: never a
publish into the void.
"""

import json
from collections import defaultdict
from types import SimpleNamespace

from django.conf import settings
from django.db.models import Subquery

from dlq.actions import replay, routes
from dlq.broker import amqp, mgmt
from dlq.models import Message
from dlq.models.actions import ItemState, Job

NOTHING = "nothing would receive the replay"
ROUTE_FIELDS = ("vhost", "queue", "original_exchange", "original_routing_keys_json", "failed_queue")


def closed(job: Job, size: int) -> str:
    """Why the next `size` messages of the job may not be published yet ("" when they may)."""
    checked: dict[str, str] = {}  # vhost -> why the console cannot publish there
    overrides = replay.load_overrides()
    step = job.items.filter(state=ItemState.PENDING).order_by("id").values("message_id")[:size]
    taking = defaultdict(list)  # (vhost, route) -> the sources whose messages take it
    for source, route in _routes(step, job.target, overrides):
        taking[source["vhost"], route].append(source)
    for (vhost, route), sources in taking.items():
        if vhost not in checked:
            checked[vhost] = refused(vhost)
            if checked[vhost]:
                return checked[vhost]
        if why := reached(vhost, route, lambda s=sources: _headers(step, s)):
            return why
    return ""


def _routes(step, target, overrides):
    """(source, route) of each distinct source among the step's messages (its ROUTE_FIELDS);
    one that cannot be resolved fails at its claim, as it would without the gate."""
    sources = Message.objects.filter(pk__in=Subquery(step)).values(*ROUTE_FIELDS).distinct()
    for source in sources:
        message = SimpleNamespace(**source)
        message.original_routing_keys = json.loads(message.original_routing_keys_json)
        try:
            yield source, replay.resolve(message, target, overrides)
        except replay.ReplayError:
            continue


def _headers(step, sources: list[dict]):
    """The plain headers of the step's messages from `sources`, each distinct set once."""
    for source in sources:
        found = Message.objects.filter(pk__in=Subquery(step), **source)
        for text in found.values_list("headers_json", flat=True).distinct():
            yield routes.headers_of(SimpleNamespace(headers=json.loads(text)))


def refused(vhost: str) -> str:
    """Why the console's user cannot publish in the vhost ("" when it can open it). The
    management API shows an administrator every vhost, permissions or not, so only a
    connection tells; without this the step would claim its messages only to fail them."""
    try:
        amqp.connect(settings.DLQ_BROKER_URL, "dlq-gate", vhost=vhost).close()
    except amqp.VhostRefused as e:
        return f"the console's user cannot open vhost {vhost!r}, so it cannot publish there: {e}"
    except amqp.AllErrors:
        return ""  # the broker is away: the step's publishers find out (the job is interrupted)
    return ""


def reached(vhost: str, route: replay.Route, headers=tuple) -> str:
    """Why a replay along `route` may not be published now ("" when it may); the redrive
    scheduler asks it per route too (dlq/redrive/scheduler.py). `headers()` gives the
    plain headers of the messages taking it: through a headers exchange each may go to
    queues of its own, and one that reaches none would be published into the void."""
    where = "" if vhost == "/" else f" in vhost {vhost!r}"
    try:
        queues, stranded = routes.reach_each(vhost, route, headers)
        if queues is None:
            return f"exchange {route.exchange!r} does not exist{where}: {NOTHING}"
        if stranded:
            which = "for the headers of some messages " if queues else ""
            return (
                f"exchange {route.exchange or '(default)'!r} routes {route.routing_key!r}"
                f" {which}to no queue{where}: {NOTHING}"
            )
        for name in sorted(queues):
            if not (mgmt.get_queue(vhost, name) or {}).get("consumers"):
                return f"queue {name!r}{where} has no consumer"
    except mgmt.ManagementError as e:
        return f"the management API did not answer, so consumers are unknown: {e}"
    return ""
