"""What replays delivered to a queue, read back from the broker, for the job tests."""

import base64
import json
import time
import urllib.request
from collections import Counter
from urllib.parse import quote, urlsplit

from django.conf import settings

from dlq.broker.publisher import ConfirmPublisher
from dlq.models import Message, Status
from dlq.models.actions import Outcome, Replay


def arrivals(channel, queue: str, quiet: float = 0.5) -> list[tuple[int, str]]:
    """Consume everything in `queue`: (dlq-origin-id, dlq-replay-id) of each message."""
    found: list[tuple[int, str]] = []

    def on_message(_ch, _method, props, _body):
        headers = props.headers or {}
        found.append((headers["dlq-origin-id"]["value"], headers["dlq-replay-id"]["value"]))

    channel.basic_qos(prefetch_count=2000)
    tag = channel.basic_consume(queue, on_message, auto_ack=True)
    last, seen = time.monotonic(), 0
    while time.monotonic() - last < quiet:
        channel.connection.process_data_events(time_limit=0.1)
        if len(found) != seen:
            last, seen = time.monotonic(), len(found)
    channel.basic_cancel(tag)
    return found


def check_replayed(channel, queue: str, message_ids: list[int], max_duplicates: int) -> int:
    """Every message replayed, confirmed and arrived at least once; no message marked
    replayed whose confirmed replay did not arrive; at most `max_duplicates` extra copies.
    Returns the number of duplicates."""
    got = arrivals(channel, queue)
    per_message = Counter(origin for origin, _ in got)
    assert set(per_message) == set(message_ids), "a message never arrived (or a stranger did)"
    duplicates = len(got) - len(message_ids)
    assert 0 <= duplicates <= max_duplicates, f"{duplicates} duplicates"
    # A copy published again is the same replay: a consumer can tell it by its replay id.
    ids_per_message = Counter(origin for origin, _ in set(got))
    assert set(ids_per_message.values()) == {1}, "a message arrived under two replay ids"
    arrived = {replay_id for _, replay_id in got}
    confirmed = dict(
        Replay.objects.filter(message_id__in=message_ids, outcome=Outcome.CONFIRMED).values_list(
            "message_id", "replay_id"
        )
    )
    assert len(confirmed) == len(message_ids)  # one confirmed replay per message, no more
    assert all(replay_id in arrived for replay_id in confirmed.values())
    statuses = Counter(Message.objects.filter(pk__in=message_ids).values_list("status", flat=True))
    assert statuses == {Status.REPLAYED: len(message_ids)}
    assert all(n == 1 for n in Message.objects.filter(pk__in=message_ids)
               .values_list("replay_count", flat=True))  # fmt: skip
    return duplicates


def _management(method: str, path: str):
    parts = urlsplit(settings.DLQ_MANAGEMENT_URL)
    request = urllib.request.Request(
        f"{parts.scheme}://{parts.hostname}:{parts.port or 15672}{path}", method=method
    )
    creds = base64.b64encode(f"{parts.username}:{parts.password}".encode()).decode()
    request.add_header("Authorization", f"Basic {creds}")
    with urllib.request.urlopen(request, timeout=5) as response:
        body = response.read()
    return json.loads(body) if body else None


def find_connection(connection_name: str, timeout: float = 30.0) -> str:
    """The broker's name of our client connection named `connection_name` (the management
    API lists a new connection only after its next statistics interval)."""
    deadline = time.monotonic() + timeout
    while True:
        for conn in _management("GET", "/api/connections?columns=name,client_properties"):
            if (conn.get("client_properties") or {}).get("connection_name") == connection_name:
                return conn["name"]
        assert time.monotonic() < deadline, f"no connection named {connection_name}"
        time.sleep(0.2)


def close_connection(broker_name: str) -> None:
    """Have the broker close one connection (by its broker name, see find_connection)."""
    _management("DELETE", f"/api/connections/{quote(broker_name, safe='')}")


def publisher(name: str):
    return ConfirmPublisher(settings.DLQ_BROKER_URL, name, window=settings.DLQ_REPLAY_WINDOW)
