"""A policy and a manual replay never hold one message at once (contract: "Redrive
policies"; issue 28, point 7): a message claimed by someone else (`replaying`) is skipped
and looked at again soon; one replayed or discarded meanwhile leaves the index; a policy
that is not active replays nothing. No broker is reached in these cases."""

from datetime import UTC, datetime, timedelta

import pytest

from dlq.models import Message, Status
from dlq.models.actions import Replay
from dlq.models.redrive import RedriveDue
from dlq.redrive import policies, scheduler
from tests.factories import make_messages

pytestmark = pytest.mark.django_db


def _policy(**changes):
    values = {"name": "flaky", "match": {"queue": "payments.dlq"}, "target": "failed_queue",
              "delay_seconds": 1, "max_attempts": 3, **changes}  # fmt: skip
    return policies.save("admin", values)


def test_a_message_someone_else_holds_is_skipped_and_looked_at_again():
    held, gone = make_messages(2, queue="payments.dlq")
    policy = _policy()
    Message.objects.filter(pk=held.pk).update(status=Status.REPLAYING)  # a job claimed it
    Message.objects.filter(pk=gone.pk).update(status=Status.DISCARDED)
    later = datetime.now(UTC) + timedelta(seconds=10)

    scheduler.run_policy(policy, later)

    assert not Replay.objects.exists()
    assert RedriveDue.objects.get(message=held).next_at == later + scheduler.BUSY_RECHECK
    assert RedriveDue.objects.get(message=held).attempt == 0
    assert RedriveDue.objects.get(message=gone).next_at is None


def test_a_disabled_policy_replays_nothing():
    make_messages(1, queue="payments.dlq")
    policy = _policy(enabled=False)

    scheduler.tick(datetime.now(UTC) + timedelta(seconds=10))

    assert policy.state == "disabled" and not Replay.objects.exists()
