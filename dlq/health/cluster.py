"""The RabbitMQ cluster as an operator needs to see it: each node up or down, the node each
drainer is connected to, and the drained queues a node loss has hurt.

Everything comes from the management API of whichever node of DLQ_MANAGEMENT_URL answers
(dlq/broker/mgmt.py tries them in turn), so a dead node is reported by the live ones.

What a node loss does to a queue (tests/clustered/test_cluster_limits.py shows it):
- a quorum queue goes on while a majority of its members is online; below its full count
  of members it has lost redundancy, without a leader it is unavailable;
- a classic queue lives on one node: while that node is down the queue is gone (the drainer
  cannot drain it, a replay routed to it is returned or nacked), until the node returns.
"""

from dataclasses import dataclass, field

from dlq.broker import mgmt


@dataclass
class Node:
    name: str
    running: bool


@dataclass
class Cluster:
    nodes: list[Node]
    listeners: dict[str, str] = field(default_factory=dict)  # "host:port" -> node name

    @property
    def up(self) -> int:
        return sum(node.running for node in self.nodes)

    @property
    def quorum(self) -> bool:
        """A majority of the nodes runs: quorum queues (and the console) keep working."""
        return self.up > len(self.nodes) // 2

    @property
    def running(self) -> set[str]:
        return {node.name for node in self.nodes if node.running}

    def node_of(self, address: str) -> str:
        """The node name behind a drainer's "host:port", or "" when no listener matches."""
        return self.listeners.get(address, "")


def read() -> Cluster:
    """The cluster now; raises mgmt.ManagementError when no node's API answers."""
    nodes = [
        Node(str(n["name"]), n.get("running") is True)
        for n in mgmt.list_nodes()
        if isinstance(n.get("name"), str)
    ]
    return Cluster(sorted(nodes, key=lambda n: n.name), _listeners())


def report() -> tuple[Cluster | None, str]:
    """read(), or None and why the management API could not tell."""
    try:
        return read(), ""
    except mgmt.ManagementError as e:
        return None, str(e)


def _listeners() -> dict[str, str]:
    """AMQP "ip:port" of each node; a port that only one node listens on is enough alone
    (a drainer may have connected through a host name, or a node listens on every address)."""
    found, by_port = {}, {}
    for listener in mgmt.amqp_listeners():
        node, ip, port = listener.get("node"), listener.get("ip_address"), listener.get("port")
        if not isinstance(node, str) or not isinstance(port, int):
            continue
        found[f"{ip}:{port}"] = node
        by_port.setdefault(port, set()).add(node)
    return {**{f"*:{p}": n.pop() for p, n in by_port.items() if len(n) == 1}, **found}


def drainer_nodes(cluster: Cluster | None, addresses: str) -> list[dict]:
    """A heartbeat's "host:port,..." as [{"address", "node", "running"}] ("node" "" and
    "running" None when the cluster cannot say)."""
    described = []
    for address in (a for a in addresses.split(",") if a):
        name = ""
        if cluster is not None:
            name = cluster.node_of(address) or cluster.node_of("*:" + address.rsplit(":", 1)[-1])
        running = (name in cluster.running) if cluster is not None and name else None
        described.append({"address": address, "node": name, "running": running})
    return described


@dataclass
class Placement:
    """Where a queue lives and how much of it is up."""

    replicas: int  # members of a quorum queue; 1 for a classic queue
    online: int
    available: bool  # it has a leader (or its node) running: it can be drained and fed
    reason: str  # "" when whole


def placement(queue: dict, running: set[str] | None = None) -> Placement | None:
    """A queue of mgmt.list_queues() or queues_with_policies(); None for a kind the
    management API does not place (or an answer without the columns)."""
    if queue.get("type") == "quorum":
        return _quorum(queue)
    if queue.get("type") == "classic" and isinstance(queue.get("node"), str):
        return _classic(queue, running)
    return None


def _quorum(queue: dict) -> Placement | None:
    members, online = queue.get("members"), queue.get("online")
    if not isinstance(members, list) or not isinstance(online, list):
        return None
    leader = queue.get("leader")
    available = isinstance(leader, str) and leader in online
    missing = sorted(set(members) - set(online))
    if not available:
        reason = (
            f"no leader: {len(online)} of {len(members)} replicas online; the queue takes"
            " and gives no messages until a majority of its members is back"
        )
    elif missing:
        spare = len(online) - (len(members) // 2 + 1)  # losses it takes with a majority left
        stops = "one more loss stops" if spare == 0 else f"{spare + 1} more losses stop"
        reason = (
            f"{len(online)} of {len(members)} replicas online ({', '.join(missing)} down):"
            f" {stops} the queue"
        )
    else:
        reason = ""
    return Placement(len(members), len(online), available, reason)


def _classic(queue: dict, running: set[str] | None) -> Placement:
    node = queue["node"]
    down = queue.get("state") == "down" or (running is not None and node not in running)
    if not down:
        return Placement(1, 1, True, "")
    reason = (
        f"classic queue on node {node}, which is down: its messages wait on that node; the"
        " drainer cannot drain it and a replay routed to it is returned or refused, until"
        " the node is back"
    )
    return Placement(1, 0, False, reason)
