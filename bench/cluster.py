"""The private three-node RabbitMQ cluster the drain bench can run on, and its nodes' memory.

`.ci/cluster` starts it (idempotent: a running cluster is found, not started again) and
says where its nodes listen and which beam.smp is each node's (by their pid files), so the
memory summed here is the cluster's own, not that of the other brokers on the machine.
"""

import re
import subprocess
import threading
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "cluster"


def _script(*args: str) -> str:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, check=True, timeout=300
    ).stdout


def start(version: str) -> tuple[str, str, list[int]]:
    """The cluster of this version, up: DLQ_BROKER_URL and DLQ_MANAGEMENT_URL listing its
    three nodes, and the pids of their beam.smp."""
    _script("start", version)
    ports = [line.split()[1:] for line in _script("ports", version).splitlines()]
    broker = ",".join(f"amqp://guest:guest@127.0.0.1:{amqp}/%2F" for amqp, _ in ports)
    management = ",".join(f"http://guest:guest@127.0.0.1:{http}" for _, http in ports)
    pids = [int(pid) for pid in re.findall(r"\bpid=(\d+)", _script("status", version))]
    if len(pids) != 3:
        raise SystemExit(f"the {version} cluster has {len(pids)} running nodes, not 3")
    return broker, management, pids


def rss_kib(pids: list[int]) -> int:
    """The resident memory of these processes together (VmRSS, KiB)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as f:
            total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return total


class PeakRss:
    """rss_kib(pids) at start() (`rest`) and the largest seen until stop() (`peak`),
    sampled every SAMPLE s."""

    SAMPLE = 0.2

    def __init__(self, pids: list[int]):
        self.pids, self.rest, self.peak = pids, 0, 0
        self.done = threading.Event()
        self.sampler = threading.Thread(target=self._sample, name="rss-meter", daemon=True)

    def start(self) -> None:
        self.rest = self.peak = rss_kib(self.pids)
        self.sampler.start()

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, rss_kib(self.pids))
            if self.done.wait(self.SAMPLE):
                return

    def stop(self) -> int:
        self.done.set()
        self.sampler.join()
        self.peak = max(self.peak, rss_kib(self.pids))
        return self.peak
