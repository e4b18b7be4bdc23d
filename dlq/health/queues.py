"""The drained queues as the overview and GET /api/v1/queues show them: parked count, last
arrival, and the depth on the broker (management API) in each queue's own vhost."""

from dlq.broker import mgmt
from dlq.messages import tallies
from dlq.models import DrainedQueue


def queue_overview(vhost: str | None = None) -> list[dict]:
    """Drained queues and queues holding stored messages, with counts and broker depth;
    with `vhost`, only that vhost's (the broker is asked about it alone)."""
    stored = tallies.per_queue(vhost)
    drained = DrainedQueue.objects.all()
    if vhost is not None:
        drained = drained.filter(vhost=vhost)
    known = {(q.vhost, q.name): q for q in drained}
    keys = sorted(set(stored) | set(known))
    depths = broker_depths(sorted({vhost for vhost, _ in keys}))
    return [_queue_row(key, stored.get(key), known.get(key), depths) for key in keys]


def _queue_row(key, stored: dict | None, known: DrainedQueue | None, depths: dict) -> dict:
    arrivals = [t for t in (stored and stored["last"], known and known.last_arrival_at) if t]
    return {
        "vhost": key[0],
        "name": key[1],
        "queue_type": known.queue_type if known else "",
        "parked": stored["parked"] if stored else 0,
        "depth": depths.get(key),
        "last_arrival_at": max(arrivals, default=None),
    }


def broker_depths(vhosts: list[str]) -> dict[tuple[str, str], int]:
    """Messages per queue on the broker; whatever the management API cannot tell is left out."""
    return depths_of(broker_queues(vhosts))


def depths_of(queues: dict[tuple[str, str], dict]) -> dict[tuple[str, str], int]:
    return {key: q["messages"] for key, q in queues.items() if isinstance(q.get("messages"), int)}


def broker_queues(vhosts: list[str]) -> dict[tuple[str, str], dict]:
    """The queues of these vhosts as mgmt.list_queues() lists them, by (vhost, name); the
    vhosts the management API cannot tell about are left out."""
    found = {}
    for vhost in vhosts:
        try:
            queues = mgmt.list_queues(vhost)
        except mgmt.ManagementError:
            break  # unreachable: do not wait once per vhost
        for queue in queues if isinstance(queues, list) else ():
            if isinstance(queue, dict) and isinstance(queue.get("name"), str):
                found[(vhost, queue["name"])] = queue
    return found
