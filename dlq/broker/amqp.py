"""Connections, node failover, consuming and acking; with dlq/broker/publisher.py (publishing
with confirms), the only module that imports pika. AMQP values are read and written by
dlq/broker/codec.py, which pika uses for every content header through `TypedProperties`.
"""

import copy
import select
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as _FutureTimeout
from urllib.parse import quote, urlsplit, urlunsplit

import pika
from pika import exceptions as _exc
from pika import spec
from pika.adapters.utils import io_services_utils as _io_services
from pika.adapters.utils.connection_workflow import AMQPConnectorException as _ConnectorError

from dlq.broker.properties import check_property_names, encode_properties, read_properties

# pika raises some connect failures as they are, not as an AMQPError: a node that takes the
# TCP connection and then says nothing (hung, or half dead) times the AMQP handshake out.
ConnectionErrors = (_exc.AMQPConnectionError, _ConnectorError, ConnectionError, OSError)
ChannelErrors = (_exc.AMQPChannelError,)
AllErrors = (_exc.AMQPError, _ConnectorError, ConnectionError, OSError)
# The broker answers but will not open the vhost for this user (no permissions there, or
# no such vhost): 530 NOT_ALLOWED while the connection opens.
VhostRefused = _exc.ProbableAccessDeniedError


class NoAnswer(_exc.AMQPError):
    """The broker did not answer in time (declare_within)."""

    def __repr__(self) -> str:  # AMQPError's says "An unspecified AMQP error has occurred"
        return f"NoAnswer({self.args[0]!r})"


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


def address(conn) -> str:
    """host:port of the node a connection went through (what its heartbeat row shows)."""
    params = conn._impl.params
    return f"{params.host}:{params.port}"


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


def went_silent(error: Exception) -> bool:
    """The connection was given up because the node stopped answering (missed
    heartbeats): it may be hung, and still act on what it received, later."""
    return isinstance(error, _exc.AMQPHeartbeatTimeout)


def node_of(conn) -> str:
    """host:port of the node a connection is on (for logs: which node of the cluster)."""
    params = conn._impl.params
    return f"{params.host}:{params.port}"


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


def declare_within(conn, name: str, arguments: dict, seconds: float) -> None:
    """Declare a durable queue through the node `conn` is on, and wait at most `seconds` for
    the broker's answer: NoAnswer then. A refusal raises as queue_declare's does.

    BlockingChannel.queue_declare waits for as long as the broker takes, and RabbitMQ 4.0
    answers about a classic queue whose node is down only after about 67 s (3.10 refuses at
    once). Nor can a channel left waiting on `conn` be given up: closing it, or `conn`, would
    wait for that answer too. So the declare goes on a connection of its own, in a daemon
    thread, left to the late answer (a refusal: 404, "failed to perform operation on queue
    ... due to timeout") and closed after it."""
    params = copy.copy(conn._impl.params)
    params.client_properties = {"connection_name": f"dlq-declare {name}"}
    answer: Future = Future()

    def declare() -> None:
        try:
            probe = pika.BlockingConnection(params)
        except BaseException as e:
            answer.set_exception(e)
            return
        try:
            probe.channel().queue_declare(name, durable=True, arguments=arguments)
            answer.set_result(None)
        except BaseException as e:
            answer.set_exception(e)
        finally:
            if probe.is_open:
                probe.close()

    threading.Thread(target=declare, name="dlq-declare", daemon=True).start()
    try:
        answer.result(timeout=seconds)
    except _FutureTimeout:
        raise NoAnswer(f"no answer about queue {name!r} within {seconds} s") from None


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
