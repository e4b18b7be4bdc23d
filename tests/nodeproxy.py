"""A stand-in for one node of a RabbitMQ cluster, for the failover tests: a TCP proxy in a
subprocess of its own, forwarding loopback ports to the real broker's AMQP (and management)
ports. A test lists the proxy as "node 1" and the broker itself as "node 2".

`kill()` SIGKILLs the proxy: the kernel closes every socket it held at once, so each client
and the broker see their connection drop in the middle of whatever they were doing, like a
node that died; the ports then refuse connections. `freeze()` SIGSTOPs it instead: the
connections stay open and silent, like a hung node or a network partition, until heartbeats
give up on them. The proxy itself is standard library only (asyncio).

A plugin of tests/conftest.py: the `node1` fixture. Run as a script,
`python tests/nodeproxy.py HOST:PORT [HOST:PORT ...]` listens on one free loopback port per
target and prints `ports P1 P2 ...`, then `accepted PORT` per connection.
"""

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

# --- the proxy process --------------------------------------------------------------------


async def _pipe(reader, writer) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()  # one side gone: the other goes too, as with a node's socket


def _handler(host: str, port: int, listen_port: list[int]):
    async def forward(client_reader, client_writer) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.close()
            return
        print(f"accepted {listen_port[0]}", flush=True)
        await asyncio.gather(_pipe(client_reader, up_writer), _pipe(up_reader, client_writer))

    return forward


async def _serve(targets: list[str]) -> None:
    servers, ports = [], []
    for target in targets:
        host, _, port = target.rpartition(":")
        listen_port: list[int] = []
        server = await asyncio.start_server(_handler(host, int(port), listen_port), "127.0.0.1", 0)
        listen_port.append(server.sockets[0].getsockname()[1])
        servers.append(server)
        ports.append(listen_port[0])
    print("ports " + " ".join(map(str, ports)), flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


# --- the test's handle ----------------------------------------------------------------------


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    default = {"amqp": 5672, "amqps": 5671, "http": 80, "https": 443}[parts.scheme]
    return f"{parts.hostname}:{parts.port or default}"


class NodeProxy:
    """The proxy subprocess, forwarding to the host:port of each URL given."""

    def __init__(self, *urls: str):
        self.urls = urls
        self.log = Path(tempfile.mkstemp(prefix="dlq-nodeproxy-", suffix=".log")[1])
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, __file__, *map(_host_port, urls)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.ports = self._wait_ports()

    def _wait_ports(self, timeout: float = 10.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self._lines():
                if line.startswith("ports "):
                    return [int(p) for p in line.split()[1:]]
            assert self.proc.poll() is None, f"the proxy exited: {self.log.read_text()}"
            time.sleep(0.05)
        raise AssertionError("the proxy did not report its ports")

    def _lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()

    def url(self, url: str) -> str:
        """`url` (one of those given) pointed at the proxy: the same URL on node 1."""
        return _on_port(url, self.ports[self.urls.index(url)])

    def accepted(self, url: str) -> int:
        """Connections forwarded so far to the target of `url`."""
        port = self.ports[self.urls.index(url)]
        return sum(line == f"accepted {port}" for line in self._lines())

    def cluster(self) -> dict:
        """The settings of a two-node cluster: node 1 is this proxy, node 2 the broker
        itself (the URLs given, AMQP first, then management)."""
        amqp_url, management_url = self.urls
        return {
            "DLQ_BROKER_URL": f"{self.url(amqp_url)},{amqp_url}",
            "DLQ_MANAGEMENT_URL": f"{self.url(management_url)},{management_url}",
        }

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """The node dies: every connection through it drops at once."""
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def freeze(self) -> None:
        """The node hangs: its connections stay open, and nothing passes any more."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def close(self) -> None:
        self.kill()
        self.log.unlink(missing_ok=True)


def dead_node(url: str) -> str:
    """`url` pointed at a loopback port where nothing listens: a node that is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return _on_port(url, port)


def _on_port(url: str, port: int) -> str:
    """The same URL (credentials, vhost) at 127.0.0.1:port."""
    parts = urlsplit(url)
    creds = parts.netloc.rpartition("@")[0]
    netloc = f"{creds}@127.0.0.1:{port}" if creds else f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=netloc))


@pytest.fixture
def node1(rabbit):
    """Node 1 of a two-node cluster: a proxy in front of the broker the test runs on, which
    is node 2 (`node1.cluster()` gives the settings naming both). Killed at teardown."""
    proxy = NodeProxy(rabbit.url, rabbit.management)
    yield proxy
    proxy.close()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1:]))
