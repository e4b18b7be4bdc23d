"""A real consumer process for the safe-replay tests: it consumes one queue, rejects
(requeue=false, so the queue's dead-letter exchange takes them) the messages whose body is
one it was told to fail (or to fail once: the first delivery of such a body only, as a
transient failure does), and acks the rest. "Came back" and "has a consumer" are then what
the broker sees.

    python -m tests.failingconsumer AMQP_URL QUEUE LOG [--fail BODY]... [--fail-once BODY]...

Each delivery is a line of LOG, written before it is answered: `ack|reject REPLAY_ID
ORIGIN_ID`. `ready` is the first line, once it consumes.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pika

from tests import ROOT


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("queue")
    parser.add_argument("log")
    parser.add_argument("--fail", action="append", default=[])
    parser.add_argument("--fail-once", action="append", default=[])
    args = parser.parse_args()
    fail = {body.encode() for body in args.fail}
    once = {body.encode() for body in args.fail_once}
    connection = pika.BlockingConnection(pika.URLParameters(args.url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=10)
    with open(args.log, "a", buffering=1) as log:

        def on_message(ch, method, props, body):
            headers = props.headers or {}
            verdict = "reject" if body in fail or body in once else "ack"
            once.discard(body)
            replay_id = headers.get("dlq-replay-id", b"")
            replay_id = replay_id.decode() if isinstance(replay_id, bytes) else replay_id
            log.write(f"{verdict} {replay_id} {headers.get('dlq-origin-id', '')}\n")
            if verdict == "reject":
                ch.basic_reject(method.delivery_tag, requeue=False)
            else:
                ch.basic_ack(method.delivery_tag)

        channel.basic_consume(args.queue, on_message)
        log.write("ready\n")
        signal.signal(signal.SIGTERM, lambda *_: channel.stop_consuming())
        channel.start_consuming()
    connection.close()


class Consumer:
    """The consumer as a subprocess of the test; stopped (by its own pid) at the end."""

    def __init__(self, url: str, queue: str, fail: list[bytes] = (), once: list[bytes] = ()):
        self.log = Path(tempfile.mkstemp(prefix="dlq-consumer-", suffix=".log")[1])
        args = [sys.executable, "-m", "tests.failingconsumer", url, queue, str(self.log)]
        for body in fail:
            args += ["--fail", body.decode()]
        for body in once:
            args += ["--fail-once", body.decode()]
        self.proc = subprocess.Popen(args, cwd=ROOT, env=os.environ.copy())
        deadline = time.monotonic() + 30
        while "ready" not in self.lines():
            assert self.proc.poll() is None, "the consumer exited"
            assert time.monotonic() < deadline, "the consumer never consumed"
            time.sleep(0.05)

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def deliveries(self) -> list[tuple[str, str, str]]:
        """(verdict, replay id, origin id) of each delivery so far."""
        return [tuple(line.split(" ")) for line in self.lines() if line != "ready"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)
        self.log.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
