"""Publishing with `mandatory` and publisher confirms, many messages in flight at once: the
replays, single and bulk. Connections and node failover are dlq/broker/amqp.py's.

The detail of an `error` outcome says what an operator needs to act on it: a publish whose
confirm never came (its connection lost, or no answer in time) may have reached its queue,
so a second replay may deliver it twice; a publish never sent did not.
"""

import time

import pika
from pika import spec

from dlq.broker import codec
from dlq.broker.amqp import _answered, _in_turn, _on_node_lost, parameters, vhost_of

REPLAY_ID_HEADER = "dlq-replay-id"
# The start of the error detail of publishes a channel close cut off (their fate unknown).
CHANNEL_CLOSED = "channel closed"
# What the detail of a publish with an unknown fate adds, for an operator at 3 a.m.
MAY_BE_STORED = "the broker may have stored it; check the target queue before replaying again"
# The detail of a nack: what makes a broker refuse a message, and what the operator can do.
NACKED = (
    "the broker refused the message (basic.nack): a queue it routes to is full (x-overflow"
    " reject-publish) or was electing a new leader after a node loss; replay it again once"
    " the queue takes messages"
)


def _lost(reason) -> str:
    """The detail of a publish whose connection closed before its confirm came."""
    return f"connection lost before the broker confirmed ({reason!r}): {MAY_BE_STORED}"


class Outgoing:
    """One message to publish; `key` must also be its dlq-replay-id header (returns carry no
    sequence number, so a basic.return is matched to its publish by that header)."""

    __slots__ = ("key", "exchange", "routing_key", "body", "properties")

    def __init__(self, key: str, exchange: str, routing_key: str, body: bytes, properties):
        self.key, self.exchange, self.routing_key = key, exchange, routing_key
        self.body, self.properties = body, properties


class ConfirmPublisher:
    """Publishes with `mandatory` and publisher confirms, many messages in flight at once.

    pika's blocking confirm waits for each confirm (about 600 msg/s here); this keeps a
    window of outstanding publishes on a SelectConnection and settles each one by the
    broker's ack/nack (multiple-aware) and any basic.return that precedes the ack.
    Outcomes: confirmed, unroutable (returned), nacked, error (channel or connection closed
    before the confirm: the broker may or may not have routed it).
    """

    def __init__(
        self,
        url: str,
        name: str = "dlq-replay",
        window: int = 1000,
        vhost: str | None = None,
        heartbeat: int = 30,
    ):
        """Open on the first node of `url` that answers, in `vhost` (default: the URL's)."""
        self.window, self.heartbeat = window, heartbeat
        self.results: dict[str, tuple[str, str]] = {}
        self.vhost = vhost or vhost_of(url)
        for node in _in_turn(url, vhost):
            self._open(node, name)
            if not self._error:
                self._conn.add_on_close_callback(_on_node_lost(url, _answered(url, node, vhost)))
                return
        raise ConnectionError(self._error)

    def _open(self, node: str, name: str) -> None:
        self._error: str | None = None
        self._channel = None
        self._ready = False
        self.frame_max, self.server_version = 131072, ""  # the broker's, once it opens
        self._conn = pika.SelectConnection(
            parameters(node, name, self.heartbeat),
            on_open_callback=self._on_open,
            on_open_error_callback=self._on_open_error,
            on_close_callback=self._on_conn_closed,
        )
        self._run(lambda: self._ready or self._error is not None, timeout=15)
        if not self._ready and not self._error:
            self._error = "the broker did not open a channel in time"
            self.close()

    @property
    def broken(self) -> bool:
        """The connection is gone: outstanding publishes have an unknown fate."""
        return self._error is not None or not self._conn.is_open

    @property
    def outstanding(self) -> int:
        """Publishes sent that have no outcome yet."""
        return len(getattr(self, "_tags", ()))

    def tend(self) -> None:
        """One turn of the I/O loop, without waiting. A publisher idle while others publish
        sends its heartbeats (the broker drops a connection that misses two) and learns
        whether the broker has dropped it meanwhile (`broken`)."""
        if not self.broken:
            self._run(lambda: True, timeout=0)

    def wait(self, seconds: float) -> None:
        """Let `seconds` pass with the I/O loop turning: heartbeats go out, and a connection
        the broker drops meanwhile is seen at once (`broken`)."""
        if not self.broken:
            self._run(lambda: self.broken, timeout=seconds)

    def renew_channel(self, timeout: float = 15.0) -> None:
        """Publish on a new channel from now on (nothing may be outstanding). RabbitMQ 3.10
        nacks every publish to a quorum queue on a channel whose first publish to it came
        while the queue had no leader (its node just died), for as long as the channel
        lives [seen: still after 20 s]; a new channel is confirmed as soon as the cluster has
        elected a leader (about 0.1 s later). 4.0 holds such publishes until then instead."""
        if self.broken or self._channel is None or not self._channel.is_open:
            return
        self._channel.close()  # _on_channel_closed opens the next one
        self._run(lambda: self._ready or self.broken, timeout)

    # connection plumbing
    def _on_open(self, conn):
        # What a message built for this connection must fit, kept as plain values: a bulk
        # job's claim thread reads them while this one publishes, and pika forgets the
        # server's properties (None) as soon as the connection closes, so a claim that read
        # a connection its node had just dropped died (AttributeError) and the job with it.
        self.frame_max = conn.params.frame_max  # as negotiated (Connection.Tune)
        version = (conn.server_properties or {}).get("version", b"")
        self.server_version = version.decode() if isinstance(version, bytes) else str(version)
        conn.channel(on_open_callback=self._on_channel)

    def _on_open_error(self, _conn, error):
        self._error = f"cannot connect to the broker: {error!r}"
        self._conn.ioloop.stop()

    def _on_conn_closed(self, _conn, reason):
        self._error = self._error or f"connection closed: {reason!r}"
        self._fail_outstanding(_lost(reason))
        self._conn.ioloop.stop()

    def _on_channel(self, channel):
        self._channel = channel
        channel.add_on_close_callback(self._on_channel_closed)
        channel.add_on_return_callback(self._on_return)
        channel.confirm_delivery(self._on_confirm, callback=lambda _frame: self._set_ready())
        self._tags: dict[int, str] = {}
        self._returned: dict[str, str] = {}
        self._seq = 0

    def _set_ready(self):
        self._ready = True

    def _on_channel_closed(self, _channel, reason):
        if not self._conn.is_open:  # the connection went (pika closes its channels first)
            self._fail_outstanding(_lost(reason))
            return
        # A missing exchange or an oversized frame closes the channel: everything still
        # in flight has an unknown fate; reopen for whatever comes next.
        self._fail_outstanding(f"{CHANNEL_CLOSED}: {reason!r}")
        self._ready = False
        if self._conn.is_open:
            self._conn.channel(on_open_callback=self._on_channel)

    def _fail_outstanding(self, detail: str):
        for key in getattr(self, "_tags", {}).values():
            self.results.setdefault(key, ("error", detail))
        if hasattr(self, "_tags"):
            self._tags.clear()

    def _on_return(self, _channel, method, properties, _body):
        headers = properties.headers or {}
        key = codec.plain(headers.get(REPLAY_ID_HEADER))
        if isinstance(key, str):
            self._returned[key] = f"{method.reply_code} {method.reply_text}"

    def _on_confirm(self, frame):
        method = frame.method
        nack = isinstance(method, spec.Basic.Nack)
        tags = (
            [t for t in self._tags if t <= method.delivery_tag]
            if method.multiple
            else [method.delivery_tag]
        )
        for tag in tags:
            key = self._tags.pop(tag, None)
            if key is None:
                continue
            if nack:
                self.results[key] = ("nacked", NACKED)
            elif key in self._returned:
                self.results[key] = ("unroutable", f"no queue bound: {self._returned.pop(key)}")
            else:
                self.results[key] = ("confirmed", "")

    def _run(self, done, timeout: float):
        deadline = time.monotonic() + timeout

        def check():
            if done() or time.monotonic() >= deadline:
                self._conn.ioloop.stop()
            else:
                self._conn.ioloop.call_later(0.005, check)

        self._conn.ioloop.call_later(0, check)
        self._conn.ioloop.start()

    def publish(self, items: list[Outgoing], timeout: float = 60.0, rate_per_s=None) -> dict:
        """Publish and wait for every outcome; returns {key: (outcome, detail)}."""
        pending = list(reversed(items))
        wanted = {item.key for item in items}
        interval = 1.0 / rate_per_s if rate_per_s else 0.0
        started, sent = time.monotonic(), [0]

        def pump():
            if not self._ready or self._channel is None or not self._channel.is_open:
                return
            # The k-th publish is due k intervals after the start: pump runs every few ms,
            # so each run catches up with what fell due since the last one.
            while pending and len(self._tags) < self.window:
                if interval and sent[0] * interval > time.monotonic() - started:
                    return
                item = pending.pop()
                self._seq += 1
                self._tags[self._seq] = item.key
                self._channel.basic_publish(
                    item.exchange, item.routing_key, item.body, item.properties, mandatory=True
                )
                sent[0] += 1

        def done():
            if self._error:
                return True
            pump()
            return not pending and all(key in self.results for key in wanted)

        self._run(done, timeout)
        unsent = f"not sent, safe to replay again: {self._error or 'timed out'}"
        for item in pending:  # never handed to pika: the broker cannot have it
            self.results[item.key] = ("error", unsent)
        for item in items:
            self.results.setdefault(item.key, ("error", f"no confirm in time: {MAY_BE_STORED}"))
        return {key: self.results.pop(key) for key in wanted}

    def close(self):
        if self._conn.is_open:
            self._conn.close()
        if self._conn.is_closing:  # by us, or by the broker: let it end, socket and all
            self._run(lambda: self._conn.is_closed, timeout=5)
