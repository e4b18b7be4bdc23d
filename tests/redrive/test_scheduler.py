"""Redrive policies at work (contract: "Redrive policies"): a real drainer stores what a
real consumer process rejects back to the parking queue, linked by dlq-origin-id, and the
scheduler replays what is due: from a real Celery worker, as beat starts it, or called in
the test for the steps a test checks one tick at a time. The tests wait on what the
console shows (statuses, the due index, the policy's state), never on time."""

import time

import pytest

from dlq.messages import search
from dlq.models import AuditEntry, Message, Status
from dlq.models.actions import Replay
from dlq.models.redrive import RedriveDue, RedrivePolicy
from dlq.redrive import policies, scheduler
from dlq.tasks import redrive as redrive_tasks
from dlq.tasks import search as search_tasks
from tests.celeryworker import Worker
from tests.factories import client_for, make_messages, make_user
from tests.failingconsumer import Consumer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FLAKY = b'{"charge": "flaky"}'


@pytest.fixture
def setup(rabbit, top, spawn, db_url):
    """A work queue dead-lettering into a parking queue a real drainer stores from; the
    test starts the consumer."""
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    spawn([park], db_url)
    started = []

    def consumer(fail=(), once=()):
        started.append(Consumer(rabbit.url, work, list(fail), list(once)))
        return started[-1]

    yield {"park": park, "work": work, "consumer": consumer, "top": top}
    for c in started:
        c.stop()


def _policy(park: str, **changes) -> RedrivePolicy:
    values = {"name": "flaky", "match": {"queue": park}, "target": "failed_queue",
              "delay_seconds": 1, "backoff": 1, "max_attempts": 3, "trip_returns": 10,
              "trip_window_seconds": 300, **changes}  # fmt: skip
    return policies.save("admin", values, "a flaky downstream")


def _lineage(first: Message) -> list[Message]:
    return list(Message.objects.filter(lineage_id=first.pk).order_by("id")) or [first]


def _until(predicate, what: str, step=None, timeout: float = 60.0, state=None):
    """Wait for `predicate()`; `step` runs between two looks (a tick, as beat would);
    `state()` says what the console holds when it never comes."""
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"{what}; {state() if state else ''}"
        if step:
            step()
        time.sleep(0.1)
    return found


def _tick() -> None:
    search.run_pass()  # the indexer's watermark: what the matcher may read (beat runs both)
    scheduler.tick()


def test_a_transient_failure_is_redriven_after_its_delay_and_ends_replayed(setup):
    park = setup["park"]
    first = make_messages(1, queue=park, died_in=setup["work"], body=FLAKY)[0]
    consumer = setup["consumer"](once=[FLAKY])
    policy = _policy(park)
    queue = setup["top"].celery_queue()
    worker = Worker(queue)
    try:
        worker.wait_ready()
        beat = [0.0]

        def as_beat():
            if time.monotonic() - beat[0] > 0.5:
                search_tasks.index_search.apply_async(queue=queue)
                redrive_tasks.redrive_tick.apply_async(queue=queue)
                beat[0] = time.monotonic()

        def settled():
            lineage = Message.objects.filter(pk=first.pk) | Message.objects.filter(
                previous__isnull=False, lineage_id=first.pk)  # fmt: skip
            rows = list(lineage.order_by("id"))
            return rows if len(rows) == 2 and rows[-1].status == Status.REPLAYED else None

        def state():
            rows = list(Message.objects.filter(lineage_id=first.pk).values_list(
                "id", "status", "previous_id"))  # fmt: skip
            due = list(RedriveDue.objects.values_list("message_id", "attempt", "next_at",
                                                       "exhausted", "returned_at"))  # fmt: skip
            return (f"messages {rows} first {first.pk}; due {due}; indexed up to "
                    f"{search.indexed_upto()}; consumer {consumer.deliveries()}; worker log:\n"
                    f"{worker.output()[-4000:]}")  # fmt: skip

        first_back, second = _until(settled, "redriven twice, replayed", as_beat, state=state)
    finally:
        worker.stop()

    # The first redrive came back (the consumer rejected it), the second was taken.
    assert first_back.pk == first.pk and second.previous_id == first.pk
    assert [v for v, _, _ in consumer.deliveries()] == ["reject", "ack"]
    assert RedriveDue.objects.get(message=second).attempt == 2
    assert RedriveDue.objects.get(message=second).returned_at == second.received_at
    # Ordinary replays: confirmed, audited with the policy as the actor.
    replays = Replay.objects.filter(message__in=[first, second])
    assert {(r.actor_name, r.outcome) for r in replays} == {("policy:flaky", "confirmed")}
    audited = AuditEntry.objects.filter(action="replay", actor_name="policy:flaky")
    assert audited.count() == 2
    # Not before its delay: the first redrive started at least delay_seconds after arrival.
    started = replays.get(message=first).started_at
    assert (started - first.received_at).total_seconds() >= policy.delay_seconds


def test_after_max_attempts_the_message_stays_parked_and_exhausted(setup):
    park = setup["park"]
    first = make_messages(1, queue=park, died_in=setup["work"], body=FLAKY)[0]
    setup["consumer"](fail=[FLAKY])
    _policy(park, max_attempts=2)

    def exhausted():
        return RedriveDue.objects.filter(exhausted=True, message__lineage_id=first.pk).first()

    row = _until(exhausted, "exhausted", _tick)

    last = Message.objects.get(pk=row.message_id)
    assert last.status == Status.PARKED and row.attempt == 2 and row.next_at is None
    assert Replay.objects.filter(actor_name="policy:flaky").count() == 2
    viewer = client_for(make_user("viewer"), token=True)
    redrive = viewer.get(f"/api/v1/messages/{last.pk}").json()["redrive"]
    assert redrive == {"policy": row.policy_id, "attempt": 2, "next_at": None,
                       "exhausted": True}  # fmt: skip
    _tick()  # and nothing more is replayed
    assert Replay.objects.filter(actor_name="policy:flaky").count() == 2


def test_a_policy_whose_replays_keep_coming_back_trips_once_and_stops(setup):
    park = setup["park"]
    make_messages(6, queue=park, died_in=setup["work"], body=FLAKY)
    setup["consumer"](fail=[FLAKY])
    policy = _policy(park, max_attempts=5, trip_returns=3, trip_window_seconds=60, rate_per_s=1)

    _until(lambda: RedrivePolicy.objects.get(pk=policy.pk).state == "tripped", "tripped", _tick)

    replayed = Replay.objects.filter(actor_name="policy:flaky").count()
    for _ in range(3):
        _tick()
    assert Replay.objects.filter(actor_name="policy:flaky").count() == replayed
    trips = AuditEntry.objects.filter(action="policy_trip")
    assert trips.count() == 1 and trips.get().actor_name == "policy:flaky"
    assert not Message.objects.filter(queue=park, status=Status.REPLAYING).exists()

    # Re-armed by a PUT with enabled: true: active again, counting returns from now on.
    values = {k: v for k, v in policies.describe(policy).items() if k not in ("id", "state")}
    assert policies.save("admin", values, "fixed", policy.pk).state == "active"


def test_a_policy_holds_off_while_the_route_has_no_consumer(setup):
    park = setup["park"]
    first = make_messages(1, queue=park, died_in=setup["work"], body=FLAKY)[0]
    _policy(park)
    _until(lambda: RedriveDue.objects.filter(message=first).exists(), "matched", _tick)
    RedriveDue.objects.filter(message=first).update(next_at=first.received_at)

    _tick()

    assert not Replay.objects.filter(message=first).exists()
    assert Message.objects.get(pk=first.pk).status == Status.PARKED
    assert RedriveDue.objects.get(message=first).next_at > first.received_at


def test_a_policy_never_replays_into_a_queue_the_console_drains(setup, settings):
    """As a manual replay is refused there: the console would take it straight back out."""
    park, work = setup["park"], setup["work"]
    settings.DLQ_QUEUES = [park, work]  # a glob too wide: the work queue is drained too
    first = make_messages(1, queue=park, died_in=work, body=FLAKY)[0]
    setup["consumer"]()  # a consumer: the gate alone would let it go
    _policy(park)
    _until(lambda: RedriveDue.objects.filter(message=first).exists(), "matched", _tick)
    RedriveDue.objects.filter(message=first).update(next_at=first.received_at)

    _tick()

    assert not Replay.objects.filter(message=first).exists()
    assert Message.objects.get(pk=first.pk).status == Status.PARKED
    row = RedriveDue.objects.get(message=first)
    assert row.exhausted and row.next_at is None  # alerted like any exhausted arrival
