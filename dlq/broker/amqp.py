"""The only module that imports pika: connections, node failover, consuming, acking and
publishing with confirms. AMQP values are read and written by dlq/broker/codec.py, which
pika uses for every content header through `TypedProperties`.
"""

import select
import time
from urllib.parse import quote, urlsplit, urlunsplit

import pika
from pika import exceptions as _exc
from pika import spec
from pika.adapters.utils import io_services_utils as _io_services
from pika.adapters.utils.connection_workflow import AMQPConnectorException as _ConnectorError

from dlq.broker import codec
from dlq.broker.properties import check_property_names, encode_properties, read_properties

# pika raises some connect failures as they are, not as an AMQPError: a node that takes the
# TCP connection and then says nothing (hung, or half dead) times the AMQP handshake out.
ConnectionErrors = (_exc.AMQPConnectionError, _ConnectorError, ConnectionError, OSError)
ChannelErrors = (_exc.AMQPChannelError,)
AllErrors = (_exc.AMQPError, _ConnectorError, ConnectionError, OSError)


class TypedProperties(spec.BasicProperties):
    """BasicProperties whose headers are a typed table (dlq/broker/codec.py)."""

    def decode(self, encoded, offset=0):
        return read_properties(self, encoded, offset)

    def encode(self):
        return encode_properties(self)


# Every content header pika decodes now comes through TypedProperties.
spec.props[spec.BasicProperties.INDEX] = TypedProperties

# pika reads a socket 4 KiB at a time, about three 1 KiB deliveries per recv(), and every
# recv() releases the GIL and waits to take it back: with a drainer's I/O thread per vhost
# those hand-overs cost more than the reads (bench/drain.py --vhosts 20: 0.76 of the
# one-vhost drainer at 4 KiB, 0.87 at 64 KiB; one vhost unchanged). pika still consumes at
# most _MAX_CONSUME_BYTES per pass, so no connection starves the others.
_io_services._AsyncTransportBase._MAX_RECV_BYTES = 64 * 1024


class OutgoingProperties(TypedProperties):
    """The properties of a message built to be published: encoded once, when first asked
    (a replay checks the encoded size against frame_max, then pika encodes it again to
    send), so they must not be changed after that. The encoding lives in a slot, out of
    __dict__, which pika's __eq__ and __repr__ read."""

    __slots__ = ("_encoded",)

    def encode(self):
        try:
            encoded = self._encoded
        except AttributeError:
            encoded = self._encoded = encode_properties(self)
        return list(encoded)  # a copy: pika's Header.marshal inserts into the list


def make_properties(properties: dict, headers: dict | None) -> OutgoingProperties:
    check_property_names(properties)
    return OutgoingProperties(headers=headers, **properties)


def header_frame_size(props: TypedProperties) -> int:
    """Bytes of the content-header frame payload, to check against frame_max before sending."""
    return 12 + sum(len(p) for p in props.encode())


# --- connections ------------------------------------------------------------------------
# A broker URL setting may list the nodes of one cluster, comma-separated: every connection
# tries them in turn, starting with the node that answered last (a dead node costs one
# refused connect, not one per reconnect). A connection its node drops (dead, hung: missed
# heartbeats, shutting down) moves that start on to the next node, so the reconnect does
# not wait first for the node that just failed (a hung one costs a handshake timeout).

_last_good: dict[str, int] = {}


def nodes(url: str, vhost: str | None = None) -> list[str]:
    """The node URLs of a setting; with `vhost`, each pointed at that vhost."""
    urls = [u.strip() for u in url.split(",") if u.strip()]
    if vhost is None:
        return urls
    return [_with_vhost(u, vhost) for u in urls]


def _with_vhost(url: str, vhost: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + quote(vhost, safe="")))


def _in_turn(url: str, vhost: str | None) -> list[str]:
    urls = nodes(url, vhost)
    first = _last_good.get(url, 0) % len(urls)
    return urls[first:] + urls[:first]


def _answered(url: str, node: str, vhost: str | None) -> int:
    _last_good[url] = index = nodes(url, vhost).index(node)
    return index


def _on_node_lost(url: str, index: int):
    """A close callback: a connection to node `index` closed, not by this client."""

    def closed(_conn, reason) -> None:
        # Every user of the setting whose connection to that node drops moves the start on
        # once between them, not once each (many vhosts, one node).
        if not isinstance(reason, _exc.ConnectionClosedByClient) and _last_good.get(url) == index:
            _last_good[url] = (index + 1) % len(nodes(url))

    return closed


def parameters(url: str, name: str, heartbeat: int = 30) -> pika.URLParameters:
    """Parameters of one node URL."""
    params = pika.URLParameters(url)
    params.client_properties = {"connection_name": name, "product": "DLQ Console"}
    params.heartbeat = heartbeat
    params.blocked_connection_timeout = 60
    params.connection_attempts = 1
    params.socket_timeout = 10
    return params


def connect(
    url: str, name: str, heartbeat: int = 30, vhost: str | None = None
) -> pika.BlockingConnection:
    """A connection to the first node that answers, in `vhost` (default: the URL's)."""
    error: Exception | None = None
    for node in _in_turn(url, vhost):
        try:
            conn = pika.BlockingConnection(parameters(node, name, heartbeat))
        except AllErrors as e:
            error = e
            continue
        conn._impl.add_on_close_callback(_on_node_lost(url, _answered(url, node, vhost)))
        return conn
    raise error


def ping(url: str, timeout: float = 3.0) -> None:
    """Open and close a connection to any node (for /readyz); raises one of AllErrors."""
    error: Exception | None = None
    for node in _in_turn(url, None):
        params = parameters(node, "dlq-readyz", heartbeat=0)
        params.socket_timeout = params.stack_timeout = timeout
        try:
            pika.BlockingConnection(params).close()
        except AllErrors as e:
            error = e
            continue
        _answered(url, node, None)  # the next probe (and connection) begins there
        return
    raise error


def vhost_of(url: str) -> str:
    """The vhost of a URL setting (every node URL names the same one)."""
    return pika.URLParameters(nodes(url)[0]).virtual_host


def describe(url: str) -> str:
    """host:port/vhost of each node of a URL setting, without credentials (for logs)."""
    described = []
    for node in nodes(url):
        params = pika.URLParameters(node)
        described.append(f"{params.host}:{params.port} vhost {params.virtual_host}")
    return ",".join(described)


def ack_with_note(channel, last_tag: int, queue: str, note: bytes, properties) -> None:
    """Ack every delivery up to `last_tag`, then publish `note` to `queue` through the
    default exchange: on a transactional BlockingChannel (tx_select), so that both take
    effect together at the caller's next `channel.tx_commit()` (the drainer's ack ledger,
    dlq/drain/drainer.py: Drainer._acked).

    Both frames go to pika's underlying channel, without waiting: BlockingChannel's own
    methods would flush the socket after each frame; these go out with the COMMIT.
    """
    impl = channel._impl
    impl.basic_ack(last_tag, multiple=True)
    impl.basic_publish("", queue, note, properties)


def wait_for_io(conn, timeout: float) -> bool:
    """Wait (the GIL released) until a BlockingConnection has something to do: data from
    the broker, a callback from another thread (add_callback_threadsafe), or frames still to
    send; at most `timeout` seconds (0: only look). Whether it has; its next
    `process_data_events(time_limit=0)` does it.

    Many vhosts' drainers wait here in their own threads and take turns processing
    (dlq/drain/baton.py). Reaches into pika's SelectConnection for its socket and its
    wake-up socket; on anything unexpected it returns at once, and the caller's
    process_data_events reports what is wrong."""
    try:
        impl = conn._impl
        sock = impl._transport._sock
        wake = impl.ioloop._poller._r_interrupt
        sending = bool(impl._transport._tx_buffers)
        if hasattr(sock, "pending") and sock.pending():
            return True  # TLS: decrypted bytes already read off the socket, which select misses
        readable, writable, _ = select.select([sock, wake], [sock] if sending else [], [], timeout)
    except (AttributeError, OSError, ValueError):
        return True
    return bool(readable or writable)


# --- publishing with confirms -----------------------------------------------------------

REPLAY_ID_HEADER = "dlq-replay-id"
# The start of the error detail of publishes a channel close cut off (their fate unknown).
CHANNEL_CLOSED = "channel closed"


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
    def frame_max(self) -> int:
        return self._conn.params.frame_max

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

    @property
    def server_version(self) -> str:
        version = self._conn.server_properties.get("version", b"")
        return version.decode() if isinstance(version, bytes) else str(version)

    # connection plumbing
    def _on_open(self, conn):
        conn.channel(on_open_callback=self._on_channel)

    def _on_open_error(self, _conn, error):
        self._error = f"cannot connect to the broker: {error!r}"
        self._conn.ioloop.stop()

    def _on_conn_closed(self, _conn, reason):
        self._error = self._error or f"connection closed: {reason!r}"
        self._fail_outstanding(self._error)
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
                self.results[key] = ("nacked", "the broker refused the message (basic.nack)")
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
        for item in items:
            self.results.setdefault(item.key, ("error", self._error or "no confirm in time"))
        return {key: self.results.pop(key) for key in wanted}

    def close(self):
        if self._conn.is_open:
            self._conn.close()
        if self._conn.is_closing:  # by us, or by the broker: let it end, socket and all
            self._run(lambda: self._conn.is_closed, timeout=5)
