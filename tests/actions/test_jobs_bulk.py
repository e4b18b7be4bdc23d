"""Bulk jobs in-process: a frozen filter, the rate limit, progress, cancel, skipped items."""

import re
import threading
import time

import pytest
from django.db import connection

from dlq.actions import message as message_actions
from dlq.actions import replay
from dlq.jobs import batches, control, running
from dlq.models import Message, Status
from dlq.models.actions import ItemState, Job, JobItem, JobStatus, Replay
from tests.arrivals import check_replayed, close_connection, find_connection, publisher
from tests.factories import make_messages
from tests.topology import depth, wait_depth

pytestmark = pytest.mark.django_db(transaction=True)


class Runner(threading.Thread):
    """running.run_job in a thread (its own database connection), as a worker would run it."""

    def __init__(self, job_id: int, **kwargs):
        super().__init__(daemon=True)
        self.job_id, self.kwargs, self.result = job_id, kwargs, None

    def run(self):
        try:
            self.result = running.run_job(self.job_id, **self.kwargs)
        finally:
            connection.close()


def _replay_job(top, count: int, **fields) -> tuple[str, str, Job]:
    """`count` messages parked in `<unique>.dlq` that died in `<unique>.work`, and frank's job
    replaying that queue to the failed queue: (work, park, job)."""
    work = top.queue("work")
    park = top.name("dlq")
    make_messages(count, queue=park, died_in=work)
    job = control.create_job("frank", "replay", filters={"queue": park}, target="failed_queue",
                          **fields)  # fmt: skip
    return work, park, job


def _limits(publisher):
    """claim_next's limits for every vhost: those of the one publisher (the default vhost)."""
    return lambda _vhost: (publisher.frame_max, replay.max_message_bytes())


def _progress(job_id: int) -> int:
    done, failed = Job.objects.filter(pk=job_id).values_list("done", "failed").get()
    return done + failed


def _statuses(queue: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in Message.objects.filter(queue=queue).values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts


def test_it_replays_20000_messages_by_a_frozen_filter_at_the_rate_asked(channel, top):
    work = top.queue("work")
    park = top.name("dlq")
    total, rate = 20_000, 5000
    make_messages(total, queue=park, died_in=work)
    make_messages(3, queue=top.name("other.dlq"), died_in=work)  # outside the filter
    job = control.create_job("frank", "replay", filters={"queue": park}, target="failed_queue",
                          rate_per_s=rate, reason="consumer fixed")  # fmt: skip
    late = make_messages(5, queue=park, died_in=work)  # stored after the filter was frozen
    assert job.total == total

    runner = Runner(job.pk)
    started = time.monotonic()
    runner.start()
    seen = []
    while runner.is_alive():
        seen.append(_progress(job.pk))
        time.sleep(0.2)
    elapsed = time.monotonic() - started
    runner.join()

    assert runner.result == JobStatus.DONE
    assert elapsed >= total / rate - 0.1, f"{total} messages in {elapsed:.2f} s"
    assert elapsed < 3 * total / rate
    during = [n for n in seen if 0 < n < total]
    assert len(during) >= 5, seen  # progress was visible while it ran ...
    assert during == sorted(during)  # ... and only went forward
    job.refresh_from_db()
    assert (job.status, job.done, job.failed, job.outcomes) == ("done", total, 0,
                                                                {"confirmed": total})  # fmt: skip
    assert job.started_at is not None and job.finished_at is not None
    assert _statuses(park) == {Status.REPLAYED: total, Status.PARKED: len(late)}
    assert not Message.objects.filter(pk__in=[m.pk for m in late], status="replayed").exists()
    assert _statuses(top.name("other.dlq")) == {Status.PARKED: 3}
    assert Replay.objects.filter(job=job, outcome="confirmed").count() == total
    wait_depth(channel, work, total)
    time.sleep(0.3)
    assert depth(channel, work) == total


def test_it_discards_by_ids_and_skips_what_is_no_longer_parked(channel, top):
    work = top.queue("work")
    ms = make_messages(6, queue=top.name("dlq"), died_in=work)
    message_actions.discard(ms[0].pk, "frank", "already gone")
    message_actions.replay_one(ms[1].pk, "failed_queue", "frank", "already replayed")
    ids = [m.pk for m in ms] + [10**12]  # an unknown id is not part of the job

    job = control.create_job("frank", "discard", ids=ids, reason="cleanup")
    assert job.total == 6
    assert running.run_job(job.pk) == JobStatus.DONE

    job.refresh_from_db()
    assert (job.done, job.failed, job.outcomes) == (4, 2, {"discarded": 4, "skipped": 2})
    assert _statuses(top.name("dlq")) == {Status.DISCARDED: 5, Status.REPLAYED: 1}
    states = dict(JobItem.objects.filter(job=job).values_list("message_id", "state"))
    assert states[ms[0].pk] == states[ms[1].pk] == ItemState.SKIPPED
    assert depth(channel, work) == 1


def test_it_replays_by_ids_and_skips_what_is_not_parked(channel, top):
    work = top.queue("work")
    ms = make_messages(5, queue=top.name("dlq"), died_in=work)
    message_actions.discard(ms[0].pk, "frank", "junk")
    message_actions.replay_one(ms[1].pk, "failed_queue", "frank", "single")

    job = control.create_job("frank", "replay", ids=[m.pk for m in ms], target="failed_queue",
                          reason="the rest")  # fmt: skip
    assert running.run_job(job.pk) == JobStatus.DONE

    job.refresh_from_db()
    assert (job.done, job.failed, job.outcomes) == (3, 2, {"confirmed": 3, "skipped": 2})
    assert _statuses(top.name("dlq")) == {Status.DISCARDED: 1, Status.REPLAYED: 4}
    assert Message.objects.get(pk=ms[1].pk).replay_count == 1  # not replayed a second time
    wait_depth(channel, work, 4)
    time.sleep(0.2)
    assert depth(channel, work) == 4


def test_it_records_each_messages_own_outcome_in_a_job(channel, top):
    work = top.queue("work")
    lonely = top.exchange("lonely")
    park = top.name("dlq")
    good = make_messages(3, queue=park, exchange="", routing_key=work)
    unroutable = make_messages(2, queue=park, exchange=lonely, routing_key="nobody")
    unknown = make_messages(1, queue=park, exchange="", routing_key="")  # no destination known
    Message.objects.filter(pk=unknown[0].pk).update(original_routing_keys_json="[]")

    job = control.create_job("frank", "replay", filters={"queue": park}, reason="mixed")
    assert running.run_job(job.pk) == JobStatus.DONE

    job.refresh_from_db()
    assert (job.done, job.failed) == (3, 3)
    assert job.outcomes == {"confirmed": 3, "unroutable": 2, "error": 1}
    assert _statuses(park) == {Status.REPLAYED: 3, Status.PARKED: 3}
    for m in unroutable:
        assert Replay.objects.get(message=m).outcome == "unroutable"
    assert JobItem.objects.get(job=job, message=unknown[0]).outcome == "error"
    # The job's page says why they failed, grouped by error, also for one that could not be
    # published at all.
    failures = control.failures_by_error(job)
    assert [(f["outcome"], f["count"], f["message_ids"]) for f in failures] == [
        ("unroutable", 2, [m.pk for m in unroutable]),
        ("error", 1, [unknown[0].pk]),
    ]
    assert failures[0]["error"].startswith("no queue bound: 312 NO_ROUTE")
    assert failures[1]["error"].startswith("the original destination is unknown")
    JobItem.objects.filter(job=job).update(detail="")  # as jobs of 0.5 and before kept them
    assert control.failures_by_error(job)[0]["error"] == failures[0]["error"]  # the replay's
    assert {m.pk for m in good} == set(
        Message.objects.filter(status=Status.REPLAYED).values_list("id", flat=True)
    )


def test_it_draws_each_replay_id_when_the_selection_is_frozen(channel, top):
    """A replay job's items get their ids with the freeze, and the Replay rows (and the
    published messages' dlq-replay-id) are those ids."""
    work, park, job = _replay_job(top, 5, reason="ids")
    drawn = dict(JobItem.objects.filter(job=job).values_list("message_id", "replay_id"))
    assert len(set(drawn.values())) == 5
    assert all(re.fullmatch("[0-9a-f]{32}", rid) for rid in drawn.values())

    assert running.run_job(job.pk) == JobStatus.DONE
    assert dict(Replay.objects.filter(job=job).values_list("message_id", "replay_id")) == drawn
    wait_depth(channel, work, 5)
    sent = set()
    for _ in range(5):
        _method, props, _body = channel.basic_get(work, auto_ack=True)
        sent.add(props.headers["dlq-replay-id"]["value"])
    assert sent == set(drawn.values())


def test_it_replays_a_job_frozen_before_replay_ids_were_drawn_at_the_freeze(channel, top):
    """Jobs created by 0.7 and before have items without replay ids: the claim draws them."""
    work, park, job = _replay_job(top, 3, reason="old job")
    JobItem.objects.filter(job=job).update(replay_id="")
    assert running.run_job(job.pk) == JobStatus.DONE
    confirmed = Replay.objects.filter(job=job, outcome="confirmed")
    rids = list(confirmed.values_list("replay_id", flat=True))
    assert len(set(rids)) == 3 and all(len(r) == 32 for r in rids)
    assert set(JobItem.objects.filter(job=job).values_list("replay_id", flat=True)) == set(rids)
    assert _statuses(park) == {Status.REPLAYED: 3}


def test_it_cancels_a_running_job_keeping_what_was_done(channel, top):
    total = 5000
    work, park, job = _replay_job(top, total, rate_per_s=2000, reason="slowly")

    runner = Runner(job.pk)
    runner.start()
    deadline = time.monotonic() + 20
    while _progress(job.pk) < 1000:
        assert time.monotonic() < deadline and runner.is_alive()
        time.sleep(0.02)
    control.cancel_job(job.pk, "frank")
    runner.join(timeout=20)

    assert runner.result == JobStatus.CANCELLED
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.cancel_requested
    assert 1000 <= job.done < total
    statuses = _statuses(park)
    assert statuses == {Status.REPLAYED: job.done, Status.PARKED: total - job.done}
    assert JobItem.objects.filter(job=job, state=ItemState.PENDING).count() == total - job.done
    assert not JobItem.objects.filter(job=job, state=ItemState.PUBLISHING).exists()
    wait_depth(channel, work, job.done)
    time.sleep(0.2)
    assert depth(channel, work) == job.done
    again = control.cancel_job(job.pk, "frank")  # a second cancel changes nothing
    assert (again.status, again.done, again.finished_at) == (job.status, job.done,
                                                              job.finished_at)  # fmt: skip
    assert running.run_job(job.pk) == JobStatus.CANCELLED  # a late task does nothing


def test_it_cancels_a_pending_job_at_once():
    ms = make_messages(2)
    job = control.create_job("frank", "discard", ids=[m.pk for m in ms], reason="later")

    assert control.cancel_job(job.pk, "frank").status == JobStatus.CANCELLED
    assert running.run_job(job.pk) == JobStatus.CANCELLED
    assert set(Message.objects.values_list("status", flat=True)) == {Status.PARKED}
    with pytest.raises(message_actions.NotFound):
        control.cancel_job(10**12, "frank")


def test_it_validates_a_job_field_by_field():
    with pytest.raises(message_actions.ActionError) as refused:
        control.create_job("frank", "explode", ids=[], filters={}, rate_per_s=0, reason=" ")
    assert set(refused.value.errors) == {"action", "ids", "rate_per_s", "reason"}
    with pytest.raises(message_actions.ActionError) as refused:
        control.create_job("frank", "replay", ids=[1], target={"exchange": "x"}, reason="r")
    assert set(refused.value.errors) == {"target"}
    for bad in ("12", [1, "2"], [True]):
        with pytest.raises(message_actions.ActionError) as refused:
            control.create_job("frank", "discard", ids=bad, reason="r")
        assert set(refused.value.errors) == {"ids"}
    with pytest.raises(message_actions.ActionError) as refused:
        control.create_job("frank", "discard", filters=["queue"], reason="r")
    assert set(refused.value.errors) == {"filter"}
    assert not Job.objects.exists()


def test_it_resumes_a_job_whose_worker_died_between_publish_and_settle(settings, channel, top):
    """The outbox: items left `publishing` are published again with the same replay id, and
    nothing already confirmed is published again."""
    settings.DLQ_JOB_STALE_SECONDS = 1
    work, park, job = _replay_job(top, 1500, reason="crash")
    # A first worker settles one batch, then claims and publishes a second and dies.
    assert running.claim_job(job.pk)
    publisher = running._publisher()
    try:
        limits = _limits(publisher)
        first = batches.claim_next(job, 0, limits)
        batches.settle_batch(job, first, publisher.publish(first.outgoing))
        second = batches.claim_next(job, first.items[-1].pk, limits)
        publisher.publish(second.outgoing)
        in_flight = {out.key for out in second.outgoing}  # their replay ids
    finally:
        publisher.close()
    wait_depth(channel, work, 1500)
    assert _statuses(park) == {Status.REPLAYED: 1000, Status.REPLAYING: 500}
    assert running.run_job(job.pk) == "busy"  # its heartbeat is still fresh
    time.sleep(1.1)

    assert running.run_job(job.pk) == JobStatus.DONE

    job.refresh_from_db()
    assert (job.done, job.failed) == (1500, 0)
    assert Replay.objects.filter(job=job).count() == 1500
    # The 500 in flight were published again with the replay ids of their first publish.
    second_ids = set(
        Replay.objects.filter(
            job=job, message__in=[i.message_id for i in second.items]
        ).values_list("replay_id", flat=True)
    )
    assert second_ids == in_flight
    ids = list(Message.objects.filter(queue=park).values_list("id", flat=True))
    # The 500 in flight, and only those, arrived twice.
    assert check_replayed(channel, work, ids, max_duplicates=500) == 500


def test_a_resumed_job_decides_what_the_dead_worker_claimed_but_never_published(
    settings, channel, top
):
    """A dead worker's batch also held items that were never `publishing` (here one whose
    message was discarded meanwhile, so skipped): decided only at the settle it did not
    reach. The resumed job decides them too, so every item ends with an outcome."""
    settings.DLQ_JOB_STALE_SECONDS = 1
    work, park, job = _replay_job(top, 1200, reason="crash")
    items = list(JobItem.objects.filter(job=job).order_by("id"))
    gone = items[4].message_id
    Message.objects.filter(pk=gone).update(status=Status.DISCARDED)
    assert running.claim_job(job.pk)
    publisher = running._publisher()
    try:
        first = batches.claim_next(job, 0, _limits(publisher))
        publisher.publish(first.outgoing)  # and the worker dies before the settle
    finally:
        publisher.close()
    assert JobItem.objects.get(pk=items[4].pk).state == ItemState.PENDING
    time.sleep(1.1)

    assert running.run_job(job.pk) == JobStatus.DONE

    job.refresh_from_db()
    assert (job.done, job.failed) == (1199, 1)
    assert (
        not JobItem.objects.filter(job=job)
        .exclude(state__in=[ItemState.DONE, ItemState.SKIPPED, ItemState.FAILED])
        .exists()
    )
    assert JobItem.objects.get(pk=items[4].pk).outcome == "skipped"
    wait_depth(channel, work, 1199 + 999)  # the 999 in flight arrived twice


def test_it_resumes_a_job_after_losing_the_broker_connection(settings, channel, top, unique):
    settings.DLQ_JOB_STALE_SECONDS = 1
    total = 4000
    work, park, job = _replay_job(top, total, rate_per_s=2000, reason="outage")
    job_publisher = publisher(f"{unique}-job")
    broker_name = find_connection(f"{unique}-job")

    runner = Runner(job.pk, publisher_factory=lambda _vhost: job_publisher)
    runner.start()
    deadline = time.monotonic() + 20
    while _progress(job.pk) < 1000:
        assert time.monotonic() < deadline and runner.is_alive()
        time.sleep(0.02)
    close_connection(broker_name)
    runner.join(timeout=20)

    assert runner.result == "interrupted"
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert 1000 <= job.done < total and job.failed == 0  # nothing settled as an error
    statuses = _statuses(park)
    assert statuses[Status.REPLAYED] == job.done
    in_flight = JobItem.objects.filter(job=job, state=ItemState.PUBLISHING).count()
    assert in_flight == statuses.get(Status.REPLAYING, 0)
    time.sleep(1.1)

    assert running.run_job(job.pk) == JobStatus.DONE

    job.refresh_from_db()
    assert (job.done, job.failed, job.outcomes) == (total, 0, {"confirmed": total})
    ids = list(Message.objects.filter(queue=park).values_list("id", flat=True))
    check_replayed(channel, work, ids, max_duplicates=batches.batch_size(job))


def test_it_settles_what_a_dead_worker_left_in_flight_when_the_job_was_cancelled(
    settings, channel, top
):
    settings.DLQ_JOB_STALE_SECONDS = 1
    work, park, job = _replay_job(top, 2500, reason="cancel while dead")
    assert running.claim_job(job.pk)
    publisher = running._publisher()
    try:  # a worker publishes its first batch and dies before settling it
        limits = _limits(publisher)
        first = batches.claim_next(job, 0, limits)
        publisher.publish(first.outgoing)
    finally:
        publisher.close()
    control.cancel_job(job.pk, "frank")
    time.sleep(1.1)

    assert running.run_job(job.pk) == JobStatus.CANCELLED

    job.refresh_from_db()
    assert (job.status, job.done) == (JobStatus.CANCELLED, 1000)
    assert _statuses(park) == {Status.REPLAYED: 1000, Status.PARKED: 1500}
    assert not JobItem.objects.filter(job=job, state=ItemState.PUBLISHING).exists()
    ids = [i.message_id for i in first.items]
    assert check_replayed(channel, work, ids, max_duplicates=1000) == 1000


def test_it_keeps_a_slow_running_job_to_its_worker(settings, channel, top):
    """Batches longer than DLQ_JOB_STALE_SECONDS: the heartbeat stays fresh, so no second
    worker takes the job over while the first one is alive."""
    settings.DLQ_JOB_STALE_SECONDS = 1
    work = top.queue("work")
    ms = make_messages(2400, queue=top.name("dlq"), died_in=work)
    job = control.create_job("frank", "replay", ids=[m.pk for m in ms], target="failed_queue",
                          rate_per_s=800, reason="slow")  # fmt: skip
    runner = Runner(job.pk)
    runner.start()
    while Job.objects.get(pk=job.pk).status == JobStatus.PENDING:
        time.sleep(0.01)
    answers = set()
    while runner.is_alive():
        answers.add(running.run_job(job.pk))  # another worker trying its luck
        time.sleep(0.1)
    runner.join()

    assert answers <= {"busy", JobStatus.DONE}, answers
    assert runner.result == JobStatus.DONE
    assert Job.objects.get(pk=job.pk).done == 2400
    wait_depth(channel, work, 2400)
    time.sleep(0.2)
    assert depth(channel, work) == 2400
