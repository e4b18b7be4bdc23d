import logging
import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from console.logfmt import LogfmtFormatter
from dlq.alerts import channels, delivery, engine, transports
from dlq.models import AlertAttempt, AlertChannel, TokenBucket
from tests.alertfactory import add_channel, arrive, sent_to

pytestmark = pytest.mark.django_db


@pytest.fixture
def quick_backoff(monkeypatch):
    """Retries without a server hint wait 0.1 s instead of seconds."""
    monkeypatch.setattr(transports, "BACKOFF_S", (0.1, 0.1))


def tries(ch: AlertChannel) -> list[tuple]:
    rows = AlertAttempt.objects.filter(channel_name=ch.name).order_by("id")
    return [(a.try_no, a.status, a.http_status) for a in rows]


def test_it_retries_slack_after_its_retry_after(endpoint):
    hook = add_channel("slack", endpoint)
    endpoint.reply(429, b"rate_limited", {"Retry-After": "1"})

    last = channels.send_test(hook)

    first, second = endpoint.requests
    assert second.at - first.at >= 0.95
    assert last.status == "sent"
    assert tries(hook) == [(1, "failed", 429), (2, "sent", 200)]


def test_it_honours_telegram_retry_after_in_the_body(endpoint):
    bot = add_channel("telegram", endpoint)
    endpoint.reply(429, {"ok": False, "error_code": 429, "parameters": {"retry_after": 1}})
    endpoint.default.body = b'{"ok": true, "result": {}}'

    channels.send_test(bot)

    first, second = sent_to(endpoint, "telegram")
    assert second.at - first.at >= 0.95
    assert first.path == "/tg/bot123456:SECRET-bot-token-abcdef/sendMessage"
    assert second.json()["parse_mode"] == "HTML"
    assert tries(bot) == [(1, "failed", 429), (2, "sent", 200)]


@pytest.mark.parametrize(
    ("status", "body"),
    [(404, b"no_service"), (403, b"invalid_token"), (410, b"channel_is_archived")],
)
def test_it_disables_a_slack_channel_that_is_gone(endpoint, status, body):
    hook = add_channel("slack", endpoint)
    endpoint.reply(status, body)

    last = channels.send_test(hook)

    hook.refresh_from_db()
    assert len(endpoint.requests) == 1  # a permanent error is never retried
    assert last.status == "rejected"
    assert not hook.enabled
    assert f"HTTP {status}" in hook.disabled_reason
    assert body.decode() not in hook.disabled_reason  # what answered is never shown
    assert ("gone" if status != 403 else "refused") in hook.disabled_reason


@pytest.mark.parametrize(
    ("status", "description"),
    [
        (403, "Forbidden: bot was blocked by the user"),
        (400, "Bad Request: chat not found"),
        (401, "Unauthorized"),
    ],
)
def test_it_disables_a_telegram_chat_that_is_gone(endpoint, status, description):
    bot = add_channel("telegram", endpoint)
    endpoint.reply(status, {"ok": False, "error_code": status, "description": description})

    channels.send_test(bot)

    bot.refresh_from_db()
    assert len(endpoint.requests) == 1
    assert not bot.enabled
    assert description not in bot.disabled_reason  # what answered is never shown
    assert f"HTTP {status}" in bot.disabled_reason


def test_it_retries_a_server_error_a_few_times_then_gives_up(endpoint, quick_backoff):
    hook = add_channel("webhook", endpoint)
    endpoint.reply(503, b"down", times=5)

    last = channels.send_test(hook)

    hook.refresh_from_db()
    assert len(endpoint.requests) == transports.MAX_TRIES == 3
    assert last.status == "failed"
    assert tries(hook) == [(1, "failed", 503), (2, "failed", 503), (3, "failed", 503)]
    assert hook.enabled  # a transient failure never switches a channel off


@pytest.mark.parametrize("status", [408, 425])
def test_a_webhook_4xx_that_means_not_now_is_retried(endpoint, quick_backoff, status):
    hook = add_channel("webhook", endpoint)
    endpoint.reply(status, b"later")

    last = channels.send_test(hook)

    hook.refresh_from_db()
    assert tries(hook) == [(1, "failed", status), (2, "sent", 200)]
    assert last.status == "sent" and hook.enabled


def test_it_treats_a_webhook_4xx_as_permanent(endpoint):
    hook = add_channel("webhook", endpoint)
    endpoint.reply(422, b"unprocessable")
    channels.send_test(hook)
    hook.refresh_from_db()
    assert (len(endpoint.requests), hook.enabled) == (1, False)


def test_it_never_sends_to_a_disabled_channel(endpoint):
    hook = add_channel("slack", endpoint)
    channels.set_enabled(hook, False)
    last = channels.send_test(hook)
    assert (last.status, endpoint.requests) == ("skipped", [])


def test_it_limits_how_many_alerts_a_channel_gets(endpoint):
    hook = add_channel("webhook", endpoint)
    outcomes = [channels.send_test(hook).status for _ in range(delivery.CHANNEL_BURST + 3)]
    assert outcomes == ["sent"] * delivery.CHANNEL_BURST + ["rate_limited"] * 3
    assert len(endpoint.requests) == delivery.CHANNEL_BURST


def test_it_refills_the_token_bucket_over_time():
    t0 = timezone.now()
    assert all(TokenBucket.take("k", 10, 600, t0) for _ in range(10))
    assert not TokenBucket.take("k", 10, 600, t0 + timedelta(seconds=30))
    assert TokenBucket.take("k", 10, 600, t0 + timedelta(seconds=60))
    assert not TokenBucket.take("k", 10, 600, t0 + timedelta(seconds=61))


def test_it_survives_a_channel_that_cannot_be_reached(default_rule, endpoint, quick_backoff):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens once the socket is closed
    dead = add_channel("webhook", endpoint, url=f"http://127.0.0.1:{closed}/hook")
    broken = add_channel("slack", endpoint)
    AlertChannel.objects.filter(pk=broken.pk).update(config={})  # a bad row in the table
    alive = add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 3, at=t0)

    last = {a.channel_name: a for a in map(delivery.deliver_now, engine.evaluate(t0))}

    assert last[dead.name].status == "failed"
    assert "connection failed" in last[dead.name].error
    assert last[broken.name].status == "failed"
    assert last[broken.name].error.startswith("internal error: KeyError")
    assert last[alive.name].status == "sent"
    assert len(endpoint.requests) == 1


def test_it_keeps_secrets_out_of_logs_and_errors(endpoint, caplog):
    caplog.set_level(logging.DEBUG)
    secret = "s3cr3t-path-and-token-0123456789"
    hook = add_channel("webhook", endpoint, url=f"{endpoint.url}/hooks/{secret}?key={secret}x")
    slack = add_channel("slack", endpoint, url=f"{endpoint.url}/services/{secret}")
    bot = add_channel("telegram", endpoint, token=f"42:{secret}")
    endpoint.reply(404, f"no hook at /hooks/{secret}?key={secret}x".encode())
    endpoint.reply(500, f"{endpoint.url}/services/{secret} broke".encode())
    endpoint.reply(401, {"ok": False, "description": f"Unauthorized: bot42:{secret}"})

    outcomes = [channels.send_test(ch, max_wait=0) for ch in (hook, slack, bot)]

    logged = "\n".join(LogfmtFormatter().format(r) for r in caplog.records)
    stored = [a.error for a in AlertAttempt.objects.all()]
    stored += list(AlertChannel.objects.values_list("disabled_reason", flat=True))
    assert "alert rejected" in logged and "alert failed" in logged
    assert [o.status for o in outcomes] == ["rejected", "queued", "rejected"]
    for text in [logged, *stored, *(repr(c) + str(c) for c in (hook, slack, bot))]:
        assert secret not in text


def test_it_sends_an_attempt_once_however_often_it_is_delivered(endpoint):
    hook = add_channel("webhook", endpoint)
    now = timezone.now()
    attempt = AlertAttempt.objects.create(
        channel=hook, channel_name=hook.name, kind="test", not_before=now, created_at=now
    )
    for _ in range(3):
        assert delivery.deliver_attempt(attempt.id) is None
    attempt.refresh_from_db()
    assert (attempt.status, len(endpoint.requests)) == ("sent", 1)


def test_an_attempt_whose_worker_died_while_sending_is_sent_again(endpoint):
    """Claimed (`sending`, committed before the request) by a worker that then died: the
    attempt would stay `sending`, and its alert unsent, for ever."""
    hook = add_channel("webhook", endpoint)
    now = timezone.now()
    dead, busy = (
        AlertAttempt.objects.create(
            channel=hook, channel_name=hook.name, kind="test", not_before=at, created_at=at,
            status="sending", started_at=at,
        )
        for at in (now - timedelta(minutes=6), now - timedelta(seconds=5))
    )  # fmt: skip
    assert delivery.overdue(now) == [dead.id]
    assert delivery.deliver_attempt(dead.id) is None
    dead.refresh_from_db()
    busy.refresh_from_db()
    assert (dead.status, len(endpoint.requests)) == ("sent", 1)
    assert busy.status == "sending"  # still within its worker's time: left to it


def test_it_requeues_attempts_whose_task_was_lost(endpoint):
    hook = add_channel("webhook", endpoint)
    now = timezone.now()
    lost, fresh, later = (
        AlertAttempt.objects.create(
            channel=hook, channel_name=hook.name, kind="test", not_before=at, created_at=at
        )
        for at in (now - timedelta(minutes=5), now, now + timedelta(minutes=5))
    )
    assert delivery.overdue(now) == [lost.id]


def test_a_telegram_retry_after_past_a_floats_range_is_no_hint(endpoint, quick_backoff):
    """JSON holds a 400-digit integer that float() cannot take (OverflowError, which ended
    the send): it is no hint, and the usual backoff applies."""
    bot = add_channel("telegram", endpoint)
    body = b'{"ok": false, "error_code": 429, "parameters": {"retry_after": 1' + b"0" * 400
    endpoint.reply(429, body + b"}}")
    endpoint.default.body = b'{"ok": true, "result": {}}'

    channels.send_test(bot)

    assert tries(bot) == [(1, "failed", 429), (2, "sent", 200)]
