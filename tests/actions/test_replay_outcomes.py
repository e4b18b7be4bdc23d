"""Every way a replay can fail gives its outcome, leaves the message parked, and the console
keeps working: unroutable, nacked, missing exchange, oversized header, broker unreachable."""

from datetime import timedelta

import pytest
from django.db.models import F

from dlq.actions import message as message_actions
from dlq.actions import replay
from dlq.broker import amqp
from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Outcome, Replay
from tests.factories import make_message
from tests.topology import depth, get, wait_depth

pytestmark = pytest.mark.django_db(transaction=True)


def _assert_parked_with(message_id: int, outcome: str) -> Replay:
    message = Message.objects.get(pk=message_id)
    assert (message.status, message.replay_count) == (Status.PARKED, 0)
    attempt = Replay.objects.get(message_id=message_id)
    assert attempt.outcome == outcome
    assert attempt.settled_at is not None
    entry = AuditEntry.objects.get(message_ids_json=f"[{message_id}]")
    assert entry.action == "replay"
    assert f'"outcome": "{outcome}"' in entry.detail
    return attempt


def _works_afterwards(channel, top) -> None:
    """The console is not broken by what came before: a good replay still goes through."""
    work = top.queue("after")
    m = make_message(queue=top.name("dlq"), exchange="", routing_key=work, died_in=work)
    assert (
        message_actions.replay_one(m.pk, "failed_queue", "ops", "after").outcome
        == Outcome.CONFIRMED
    )
    wait_depth(channel, work, 1)


def test_it_reports_an_unroutable_replay_and_keeps_the_message_parked(channel, top):
    lonely = top.exchange("lonely", "direct")
    m = make_message(queue=top.name("dlq"), exchange=lonely, routing_key="nobody.listens")

    result = message_actions.replay_one(m.pk, "original", "ops", "retry")

    assert result.outcome == Outcome.UNROUTABLE
    assert "312 NO_ROUTE" in result.detail
    attempt = _assert_parked_with(m.pk, Outcome.UNROUTABLE)
    assert (attempt.exchange, attempt.routing_key) == (lonely, "nobody.listens")
    # Still parked, so it can be replayed elsewhere.
    _works_afterwards(channel, top)
    assert message_actions.replay_one(m.pk, {"exchange": "", "routing_key": top.queue("elsewhere")},
                              "ops", "elsewhere").outcome == Outcome.CONFIRMED  # fmt: skip


def test_it_reports_a_nack_when_the_queue_refuses_the_message(channel, top):
    full = top.queue("full", **{"x-max-length": 0, "x-overflow": "reject-publish"})
    m = make_message(queue=top.name("dlq"), died_in=full)

    result = message_actions.replay_one(m.pk, "failed_queue", "ops", "retry")

    assert result.outcome == Outcome.NACKED
    _assert_parked_with(m.pk, Outcome.NACKED)


def test_it_reports_a_missing_exchange_as_an_error(channel, top):
    m = make_message(queue=top.name("dlq"), exchange=top.name("deleted"))

    result = message_actions.replay_one(m.pk, "original", "ops", "retry")

    assert result.outcome == Outcome.ERROR
    assert "404" in result.detail and "NOT_FOUND" in result.detail
    _assert_parked_with(m.pk, Outcome.ERROR)
    _works_afterwards(channel, top)


def test_it_reports_an_unreachable_broker_as_an_error(settings, top):
    m = make_message(queue=top.name("dlq"))
    settings.DLQ_BROKER_URL = "amqp://guest:guest@127.0.0.1:1/%2F"

    result = message_actions.replay_one(m.pk, "original", "ops", "retry")

    assert result.outcome == Outcome.ERROR
    assert "connect" in result.detail
    _assert_parked_with(m.pk, Outcome.ERROR)


def _padded(top, work: str, pad: int):
    filler = {"type": "longstr", "value": "x" * pad}
    return make_message(queue=top.name("dlq"), exchange="", routing_key=work, died_in=work,
                        headers={"filler": filler})  # fmt: skip


def _frame_size(message) -> int:
    """The content-header payload a replay of `message` would send (without validating)."""
    headers = replay.replay_headers(message, "0" * 32)
    return amqp.header_frame_size(amqp.make_properties(message.properties, headers))


def test_it_refuses_a_header_frame_above_the_frame_limit_and_sends_one_that_just_fits(channel, top):
    work = top.queue("work")
    limit = 131072 - 8  # frame_max minus the frame overhead, the limit RabbitMQ reports
    probe = _padded(top, work, 1000)
    pad = 1000 + limit - _frame_size(probe)
    too_big = _padded(top, work, pad + 1)
    just_fits = _padded(top, work, pad)
    assert _frame_size(too_big) == limit + 1
    assert _frame_size(just_fits) == limit

    with pytest.raises(message_actions.ActionError) as refused:
        message_actions.replay_one(too_big.pk, "failed_queue", "ops", "retry")

    assert refused.value.status == 400
    assert "frame limit" in str(refused.value)
    too_big.refresh_from_db()
    assert too_big.status == Status.PARKED
    assert not Replay.objects.filter(message=too_big).exists()
    assert depth(channel, work) == 0
    # The boundary is exact: the largest allowed frame goes through, and nothing broke.
    assert (
        message_actions.replay_one(just_fits.pk, "failed_queue", "ops", "fits").outcome
        == "confirmed"
    )
    _, props, _ = get(channel, work)
    assert len(props.headers["filler"]["value"]) == pad
    _works_afterwards(channel, top)


def test_it_refuses_a_body_above_the_brokers_message_size(settings, channel, top):
    work = top.queue("work")
    settings.DLQ_MAX_MESSAGE_BYTES = 1000
    m = make_message(queue=top.name("dlq"), died_in=work, body=b"x" * 1001)

    with pytest.raises(message_actions.ActionError) as refused:
        message_actions.replay_one(m.pk, "failed_queue", "ops", "retry")

    assert "1001 bytes" in str(refused.value)
    m.refresh_from_db()
    assert m.status == Status.PARKED
    assert depth(channel, work) == 0


def test_it_knows_each_brokers_default_message_size(rabbit, channel, top):
    """17 MiB: above 4.x's default max_message_size (16 MiB), well below 3.x's (128 MiB).
    On 4.x the replay is refused before publishing; 3.x takes it."""
    work = top.queue("work")
    body = b"x" * (17 * 2**20)
    m = make_message(queue=top.name("dlq"), died_in=work, body=body)

    if rabbit.v4:
        with pytest.raises(message_actions.ActionError) as refused:
            message_actions.replay_one(m.pk, "failed_queue", "ops", "retry")
        assert f"{len(body)} bytes" in str(refused.value)
        m.refresh_from_db()
        assert m.status == Status.PARKED
        assert depth(channel, work) == 0
        return
    attempt = message_actions.replay_one(m.pk, "failed_queue", "ops", "retry")
    assert attempt.outcome == Outcome.CONFIRMED
    _, _, sent = get(channel, work)
    assert sent == body


def test_it_refuses_a_target_it_cannot_resolve(top):
    m = make_message(queue=top.name("dlq"))
    for target in ("elsewhere", {"exchange": "x"}, {"exchange": "x" * 256, "routing_key": ""}):
        with pytest.raises(message_actions.ActionError) as refused:
            message_actions.replay_one(m.pk, target, "ops", "retry")
        assert "target" in refused.value.errors
    m.refresh_from_db()
    assert m.status == Status.PARKED
    assert not Replay.objects.exists()
    assert not AuditEntry.objects.exists()


def test_it_releases_a_single_replay_whose_process_died_mid_publish(top):
    stuck, fresh = (make_message(queue=top.name("dlq")) for _ in range(2))
    for m in (stuck, fresh):
        message_actions.claim_for_replay(m.pk, "original", "ops")  # ... and the process died here
    Replay.objects.filter(message=stuck).update(started_at=F("started_at") - timedelta(hours=1))

    assert message_actions.release_stale_replays() == 1

    assert Message.objects.get(pk=stuck.pk).status == Status.PARKED
    assert Message.objects.get(pk=fresh.pk).status == Status.REPLAYING  # may still be running
    attempt = Replay.objects.get(message=stuck)
    assert attempt.outcome == Outcome.ERROR and "may have been delivered" in attempt.detail
    assert message_actions.release_stale_replays() == 0
