"""One message the broker refuses does not fail its whole bulk batch (security review
finding 5): RabbitMQ closes the channel on it, and what was in flight with it is published
again one by one, so only the message that caused it ends in error."""

import json

import pytest

from dlq.jobs import control, running
from dlq.models import Job, Message, Status
from tests.arrivals import check_replayed
from tests.factories import make_messages

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_message_the_broker_refuses_fails_alone(channel, top, settings):
    work, park = top.queue("work"), top.name("dlq")
    messages = make_messages(50, queue=park, died_in=work, delivery_mode=2)
    bad = messages[20]
    # A user_id that is not the console's broker user, kept on replay: RabbitMQ (3.x and
    # 4.x alike) answers it by closing the channel.
    settings.DLQ_REPLAY_KEEP_USER_ID = True
    props = {**bad.properties, "user_id": "mallory"}
    Message.objects.filter(pk=bad.pk).update(properties_json=json.dumps(props))

    job = control.create_job("erin", "replay", filters={"queue": park}, target="failed_queue",
                          reason="consumer fixed")  # fmt: skip
    assert running.run_job(job.pk) == "done"

    job = Job.objects.get(pk=job.pk)
    assert (job.done, job.failed) == (49, 1)
    assert job.outcomes == {"confirmed": 49, "error": 1}
    good = [m.pk for m in messages if m.pk != bad.pk]
    # What was in flight with the bad message may arrive twice (its fate was unknown).
    check_replayed(channel, work, good, max_duplicates=len(good))
    bad.refresh_from_db()
    assert bad.status == Status.PARKED
    refused = bad.replays.get()
    assert refused.outcome == "error" and "user_id" in refused.detail
