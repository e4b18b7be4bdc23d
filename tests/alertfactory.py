"""Arrivals stored exactly as the drainer stores them, and alert set-ups for the tests."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from dlq.alerts import engine
from dlq.broker import amqp
from dlq.drain import pending, store
from dlq.messages.ingest import Delivery, build_row
from dlq.models import AlertChannel


def _str(value: str) -> dict:
    return {"type": "longstr", "value": value}


def _headers(died_in: str, exception: str, at: datetime, message_type: str = "") -> dict:
    death = {
        "count": {"type": "int64", "value": 1},
        "reason": _str("rejected"),
        "queue": _str(died_in),
        "time": {"type": "timestamp", "value": int(at.timestamp())},
        "exchange": _str(""),
        "routing-keys": {"type": "array", "value": [_str(died_in)]},
    }
    return {
        "x-death": {"type": "array", "value": [{"type": "table", "value": death}]},
        "x-first-death-queue": _str(died_in),
        "x-first-death-reason": _str("rejected"),
        "x-first-death-exchange": _str(""),
        "MT-Fault-ExceptionType": _str(exception),
        "MT-Fault-Message": _str("it failed"),
        **({"MT-Fault-MessageType": _str(message_type)} if message_type else {}),
    }


def arrive(queue: str, count: int = 1, *, exception: str = "ValueError", died_in: str = "",
           at: datetime | None = None, spread: timedelta = timedelta(0),
           batch: int = 500, message_type: str = "", vhost: str = "/") -> list[int]:  # fmt: skip
    """Store `count` arrivals in `queue` of `vhost` through dlq.store, `batch` rows per
    transaction, received evenly over `spread` from `at`; their ids."""
    at = at or datetime.now(UTC)
    died_in = died_in or queue.rsplit(".", 1)[0]
    props = amqp.make_properties({}, _headers(died_in, exception, at, message_type))
    delivery = Delivery(queue, vhost, "", died_in, False, props, b'{"n": 1}')
    step = spread / count if count else spread
    rows = [build_row(delivery, at + i * step) for i in range(count)]
    batch_ids = []
    for first in range(0, count, batch):
        batch_id = uuid.uuid4().hex
        store.store_batch(batch_id, "tests", rows[first : first + batch])
        batch_ids.append(batch_id)
    pending.forget_batches(batch_ids)
    return [row["id"] for row in _ids(batch_ids)]


def _ids(batch_ids: list[str]):
    from dlq.models import Message

    return Message.objects.filter(drain_batch__in=batch_ids).order_by("id").values("id")


@pytest.fixture
def endpoint(recorder, settings):
    """The recorder standing in for Slack, Telegram (the Bot API base) and webhooks."""
    settings.DLQ_TELEGRAM_API_URL = f"{recorder.url}/tg"
    settings.DLQ_CONSOLE_URL = "https://console.example"
    return recorder


def sent_to(recorder, kind: str) -> list:
    """The requests that reached the recorder for one kind of channel."""
    prefix = {"telegram": "/tg/"}.get(kind, f"/{kind}/")
    return [r for r in recorder.requests if r.path.startswith(prefix)]


@pytest.fixture
def default_rule(db):
    """Alerts counting from now, with the out-of-the-box rule."""
    engine.reset_horizon()
    return engine.ensure_default_rule()


def add_channel(kind: str, recorder, name: str = "", **config) -> AlertChannel:
    """A channel whose endpoint is the recorder."""
    if kind == "telegram":
        config = {"token": "123456:SECRET-bot-token-abcdef", "chat_id": "-1001", **config}
    else:
        config = {"url": f"{recorder.url}/{kind}/T000/B000/SECRETsecretSECRET", **config}
    return AlertChannel.objects.create(kind=kind, name=name or f"{kind}-{uuid.uuid4().hex[:6]}",
                                       config=config)  # fmt: skip
