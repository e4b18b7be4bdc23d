"""A real three-node RabbitMQ cluster for the tests (a plugin of tests/conftest.py).

`.ci/cluster` starts it (`.ci/services` does, so CI pays the start-up once; the fixture starts
it when it is not up), one cluster per version: 3.10 from the machine's packages on AMQP
5681-5683, 4.0 from ../shared/rabbitmq4 on 5691-5693. A test asks for `cluster` and runs once
per version; it may kill, hang and restart nodes, and the fixture gives it back a whole,
answering cluster afterwards (every node running and a member again).

A cluster that cannot start is not skipped silently: the test fails with the script's words.
"""

import base64
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "cluster"
VERSIONS = ("3.10", "4.0")
AUTH = "Basic " + base64.b64encode(b"guest:guest").decode()


def _script(*args: str, timeout: float = 240) -> str:
    done = subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode:
        raise RuntimeError(f".ci/cluster {' '.join(args)} failed: {done.stderr or done.stdout}")
    return done.stdout


@dataclass(frozen=True)
class Node:
    index: int  # 1, 2, 3
    name: str  # c310n1@localhost
    amqp_port: int
    management_port: int

    def url(self, vhost: str = "/") -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/{quote(vhost, safe='')}"

    @property
    def management(self) -> str:
        return f"http://guest:guest@127.0.0.1:{self.management_port}"


@dataclass
class Cluster:
    version: str
    nodes: tuple[Node, ...]
    _touched: set[int] = field(default_factory=set)
    _hung: set[int] = field(default_factory=set)  # stopped, not resumed: `cont` fails on dead

    @property
    def id(self) -> str:
        return f"cluster-{self.version}"

    def url(self, vhost: str = "/") -> str:
        """DLQ_BROKER_URL for the whole cluster: the three nodes, comma-separated."""
        return ",".join(node.url(vhost) for node in self.nodes)

    def node(self, name_or_index) -> Node:
        for node in self.nodes:
            if name_or_index in (node.index, node.name):
                return node
        raise KeyError(name_or_index)

    # -- node losses ------------------------------------------------------------------
    def kill(self, node: Node) -> None:
        """SIGKILL the node's beam.smp: it is gone at once, with no goodbye to anyone."""
        self._touched.add(node.index)
        _script("node", self.version, str(node.index), "kill")
        self._hung.discard(node.index)

    def hang(self, node: Node) -> None:
        """SIGSTOP: the node's sockets stay open and nothing answers (a hung VM or host)."""
        self._touched.add(node.index)
        _script("node", self.version, str(node.index), "stop")
        self._hung.add(node.index)

    def resume(self, node: Node) -> None:
        _script("node", self.version, str(node.index), "cont")
        self._hung.discard(node.index)

    def start(self, node: Node) -> None:
        """Start a killed node again from its data folder; it rejoins the cluster."""
        _script("node", self.version, str(node.index), "start")

    # -- what the management API of a live node says -------------------------------------
    def api(self, path: str, via: Node | None = None, timeout: float = 5):
        """GET from the management API of `via`, or of the first node that answers."""
        for node in [via] if via else self.nodes:
            request = urllib.request.Request(
                f"http://127.0.0.1:{node.management_port}/api/{path}",
                headers={"Authorization": AUTH},
            )
            try:
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    return json.load(response)
            except (OSError, urllib.error.URLError):
                if via:
                    raise
        raise RuntimeError(f"no node of the {self.version} cluster answers its management API")

    def running(self) -> set[str]:
        return {n["name"] for n in self.api("nodes") if n.get("running")}

    def queue(self, name: str, vhost: str = "/") -> dict:
        return self.api(f"queues/{quote(vhost, safe='')}/{quote(name, safe='')}")

    def leader(self, name: str, vhost: str = "/") -> Node:
        """The node leading a quorum queue (the node holding a classic one)."""
        info = self.queue(name, vhost)
        return self.node(info.get("leader") or info["node"])

    def wait_running(self, names: set[str] | None = None, timeout: float = 120) -> None:
        want = names or {node.name for node in self.nodes}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if want <= self.running():
                    return
            except RuntimeError:
                pass
            time.sleep(1)
        raise AssertionError(f"nodes {sorted(want)} not all running after {timeout}s")

    def heal(self) -> None:
        """Every node touched by the test running again and a member of the cluster."""
        for index in sorted(self._touched):
            node = self.node(index)
            if index in self._hung:
                self.resume(node)  # a hung node first comes back...
            self.start(node)  # ...and a killed one starts again (no-op for a live one)
        self._touched.clear()
        self.wait_running()


def _nodes(version: str) -> tuple[Node, ...]:
    nodes = []
    for index, line in enumerate(_script("ports", version).splitlines(), start=1):
        name, amqp, management = line.split()
        nodes.append(Node(index, name, int(amqp), int(management)))
    return tuple(nodes)


_started: dict[str, Cluster] = {}


def ensure(version: str) -> Cluster:
    """The cluster of this version, started (or found running) once per test session."""
    if version not in _started:
        _script("start", version, timeout=float(os.environ.get("DLQ_CLUSTER_TIMEOUT", 240)))
        _started[version] = Cluster(version, _nodes(version))
    return _started[version]


@pytest.fixture(params=VERSIONS, ids=lambda v: f"cluster-{v}")
def cluster(request):
    """A whole three-node cluster; healed after the test whatever it killed or hung."""
    cluster = ensure(request.param)
    cluster.wait_running()
    yield cluster
    cluster.heal()
