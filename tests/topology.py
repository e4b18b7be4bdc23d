"""Declaring a test's own queues and exchanges on the real broker, and waiting for them."""

import time

from dlq.broker import mgmt
from dlq.models import Message
from tests.drainproc import wait_for


class Topology:
    """Queues and exchanges named `<unique>.<suffix>`, all deleted after the test."""

    def __init__(self, channel, cleanup_queues, unique):
        self.ch, self.cleanup, self.prefix = channel, cleanup_queues, unique

    def name(self, suffix: str) -> str:
        return f"{self.prefix}.{suffix}"

    def queue(self, suffix: str, durable: bool = False, **arguments) -> str:
        name = self.name(suffix)
        self.ch.queue_declare(name, durable=durable, arguments=arguments or None)
        self.cleanup["queues"].append(name)
        return name

    def exchange(self, suffix: str, kind: str = "direct", **options) -> str:
        name = self.name(suffix)
        self.ch.exchange_declare(name, kind, **options)
        self.cleanup["exchanges"].append(name)
        return name

    def celery_queue(self, suffix: str = "celery") -> str:
        """A Celery queue of the test's own on Celery's transport: Celery declares it (and an
        exchange of the same name) itself; both are deleted after the test."""
        name = self.name(suffix)
        self.cleanup["celery"].append(name)
        return name

    def parking(self, suffix: str = "dlq", **arguments) -> tuple[str, str]:
        """A parking queue behind a fanout dead-letter exchange: (queue, exchange)."""
        dlx = self.exchange(f"{suffix}-x", "fanout")
        queue = self.queue(suffix, **arguments)
        self.ch.queue_bind(queue, dlx)
        return queue, dlx


def consumed(ch, vhost: str, queue: str) -> None:
    """A consumer on the queue, once the management API (what a consumer gate asks) shows
    it."""
    ch.basic_consume(queue, lambda *a: None)
    wait_for(lambda: (mgmt.get_queue(vhost, queue) or {}).get("consumers"), 30,
             f"a consumer on {queue} in the management API")  # fmt: skip


def depth(ch, queue: str) -> int:
    return ch.queue_declare(queue, passive=True).method.message_count


def wait_depth(ch, queue: str, n: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (count := depth(ch, queue)) < n:
        assert time.monotonic() < deadline, f"{queue} holds {count} messages, expected {n}"
        time.sleep(0.01)


def get(ch, queue: str, timeout: float = 10.0):
    """The next message of a queue, unacked: (method, properties, body)."""
    deadline = time.monotonic() + timeout
    while True:
        method, props, body = ch.basic_get(queue)
        if method:
            return method, props, body
        assert time.monotonic() < deadline, f"nothing arrived in {queue}"
        time.sleep(0.01)


def reject(ch, queue: str):
    """A consumer that fails: take the next message and reject it without requeue."""
    method, props, body = get(ch, queue)
    ch.basic_reject(method.delivery_tag, requeue=False)
    return props


def last_reject(ch, queue: str, dlx: str, loop: str, park: str) -> None:
    """The last attempt of a retry loop: `dlx` leads to `park` instead of `loop` from now on,
    and `queue` rejects the message once more, into the parking queue."""
    ch.queue_unbind(loop, dlx)
    ch.queue_bind(park, dlx)
    reject(ch, queue)


def stored(queue: str, n: int = 1) -> list[Message]:
    rows = list(Message.objects.filter(queue=queue).order_by("id"))
    assert len(rows) == n, f"{queue}: {len(rows)} rows stored, expected {n}"
    return rows


def only(queue: str) -> Message:
    return stored(queue)[0]


def x_death(m: Message) -> list[tuple[str, str, int]]:
    """The stored x-death as (queue, reason, count), most recent first."""
    return [
        (e["value"]["queue"]["value"], e["value"]["reason"]["value"], e["value"]["count"]["value"])
        for e in m.headers["x-death"]["value"]
    ]


def listed(name: str, vhost: str = "/") -> list[dict]:
    """The management API's view of queue `name` ([] until it lists it)."""
    from dlq.broker import mgmt

    return [q for q in mgmt.queues_with_policies(vhost) if q["name"] == name]
