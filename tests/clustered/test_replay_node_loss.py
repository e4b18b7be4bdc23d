"""Replays into a quorum queue of a real three-node cluster while the node they publish
through is SIGKILLed (tests/cluster.py), on 3.10 and 4.0; that node leads the queue too in
one test, so the queue elects a new leader meanwhile.

A bulk job goes on at once through another node, whether the node dies while the job
publishes or while it waits for its next claim (the publisher idle, its death seen only when
it is next used): it ends `done` well before a job left to be resumed would
(DLQ_JOB_STALE_SECONDS, then beat), every message arrives at least once, the only duplicates
are the documented two batches at most (README "Bulk jobs") and carry their first copy's
`dlq-replay-id`, and no message is `replayed` without a confirm (tests/arrivals.py).

A single replay whose node dies before the confirm answers the operator `error`, saying the
message may have been stored; the next try goes through another node and is confirmed.
"""

import threading
import time
import uuid
from collections import Counter

import pytest
from django.db import transaction

from dlq.broker import amqp
from dlq.jobs import batches, control
from dlq.models import Message, Status
from dlq.models.actions import Job, JobStatus, Outcome, Replay
from dlq.tasks import jobs as job_tasks
from tests.arrivals import arrivals, check_replayed
from tests.celeryworker import CELERY_TRANSPORT, Worker
from tests.drainproc import wait_for
from tests.factories import client_for, make_messages, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

STALE_S = 30  # the default: a job whose task died waits this long, then for beat
PROMPT_S = 15  # "at once": a failover costs a reconnect and a batch, not a stale heartbeat
TOTAL, RATE = 3000, 500  # six seconds of publishing; batches of RATE (batches.batch_size)


@pytest.fixture
def on_cluster(cluster, settings, monkeypatch):
    """The console (this process and the workers it starts) pointed at the whole cluster;
    the quorum queue replays go to, replicated on all three and led by node 3, which these
    tests keep alive: the publisher's node dies, not the queue's leader."""
    yield from _pointed_at(cluster, settings, monkeypatch, leader=cluster.nodes[2])


@pytest.fixture
def led_by_node_1(cluster, settings, monkeypatch):
    """The same, with the quorum queue led by node 1: the node a job begins with."""
    yield from _pointed_at(cluster, settings, monkeypatch, leader=cluster.nodes[0])


def _pointed_at(cluster, settings, monkeypatch, leader):
    url = cluster.url()
    settings.DLQ_BROKER_URL = url
    settings.DLQ_MANAGEMENT_URL = ",".join(node.management for node in cluster.nodes)
    for name, value in (("DLQ_BROKER_URL", url), ("CELERY_BROKER_URL", CELERY_TRANSPORT),
                        ("DLQ_MANAGEMENT_URL", settings.DLQ_MANAGEMENT_URL)):  # fmt: skip
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(amqp, "_last_good", {})  # this process begins with node 1 too
    cluster.work = f"t{uuid.uuid4().hex[:10]}.work"
    conn = amqp.connect(leader.url(), "dlq-tests")  # a quorum queue is led where declared
    conn.channel().queue_declare(cluster.work, durable=True,
                                 arguments={"x-queue-type": "quorum"})  # fmt: skip
    conn.close()
    assert cluster.leader(cluster.work) == leader
    yield cluster
    cluster.heal()  # before the clean-up: the queue is deleted through a whole cluster
    conn = amqp.connect(url, "dlq-tests-cleanup")
    conn.channel().queue_delete(cluster.work)
    conn.close()


@pytest.fixture
def celery_queue():
    name = f"t{uuid.uuid4().hex[:10]}.celery"
    yield name
    conn = amqp.connect(CELERY_TRANSPORT, "dlq-tests-cleanup")
    ch = conn.channel()
    ch.queue_delete(name)
    ch.exchange_delete(name)
    conn.close()


def _job(job_id: int) -> Job:
    return Job.objects.get(pk=job_id)


def _node_of(cluster, connection_name: str):
    """The node a client connection of ours is on, as the management API lists it."""

    def find():
        for conn in cluster.api("connections?columns=node,client_properties"):
            if (conn.get("client_properties") or {}).get("connection_name") == connection_name:
                return conn["node"]
        return None

    return cluster.node(wait_for(find, 20, f"the connection {connection_name}", 0.2))


def _new_job(ids: list[int]) -> Job:
    return control.create_job("grace", "replay", ids=ids, target="failed_queue", rate_per_s=RATE,
                           reason="node loss test")  # fmt: skip


def _start(job: Job, celery_queue: str) -> Worker:
    worker = Worker(celery_queue, env={"DLQ_JOB_STALE_SECONDS": str(STALE_S)})
    worker.wait_ready()
    job_tasks.run_job.apply_async((job.pk,), queue=celery_queue)
    return worker


def _finished_promptly(cluster, job: Job, ids: list[int], worker: Worker, since: float) -> float:
    """The job ends `done` soon after `since`, with every message confirmed and arrived."""
    try:
        wait_for(lambda: _job(job.pk).status == JobStatus.DONE, PROMPT_S, "the job to end")
    except AssertionError as e:
        raise AssertionError(f"{e}; {_job(job.pk).done} done; the worker said:\n"
                             f"{worker.output()[-3000:]}") from None  # fmt: skip
    finally:
        took = time.monotonic() - since
        worker.stop()
    done = _job(job.pk)
    assert (done.done, done.failed, done.outcomes) == (TOTAL, 0, {"confirmed": TOTAL})
    consumer = amqp.connect(cluster.url(), "dlq-tests")
    try:
        bound = 2 * batches.batch_size(job)  # README "Bulk jobs": at most two batches
        duplicates = check_replayed(consumer.channel(), cluster.work, ids, bound)
    finally:
        consumer.close()
    print(f"{cluster.id}: done {took:.1f} s after the node died, {duplicates} duplicates")
    return took


def test_a_bulk_replay_goes_on_at_once_when_its_node_dies_mid_publish(on_cluster, celery_queue):
    cluster = on_cluster
    ids = [m.pk for m in make_messages(TOTAL, queue="orders.dlq", died_in=cluster.work)]
    job = _new_job(ids)
    worker = _start(job, celery_queue)
    try:
        wait_for(lambda: _job(job.pk).done >= RATE, 30, "the job to be under way", 0.02)
        victim = _node_of(cluster, "dlq-replay-job")
        assert victim != cluster.nodes[2], "the job publishes through the queue's leader"
        cluster.kill(victim)  # publishing: its batches take a second each at this rate
        killed_at = time.monotonic()
        assert _job(job.pk).done < TOTAL, "the job ended before its node died: nothing tested"
    except BaseException:
        worker.stop()
        raise
    _finished_promptly(cluster, job, ids, worker, killed_at)


def test_a_bulk_replay_rides_through_its_queue_leader_dying_with_its_node(
    led_by_node_1, celery_queue
):
    """The node the job publishes through also leads the quorum queue. The job's new channel
    on a survivor first publishes to the queue before the other two have elected a leader:
    3.10 then nacks everything on that channel (4.0 holds the publishes until the election).
    The job publishes the nacked messages again on a new channel after a pause, and nothing
    ends `nacked` (before that change, 3.10 recorded 747 of 3,000 as `nacked`)."""
    cluster = led_by_node_1
    ids = [m.pk for m in make_messages(TOTAL, queue="orders.dlq", died_in=cluster.work)]
    job = _new_job(ids)
    worker = _start(job, celery_queue)
    try:
        wait_for(lambda: _job(job.pk).done >= RATE, 30, "the job to be under way", 0.02)
        victim = _node_of(cluster, "dlq-replay-job")
        assert victim == cluster.leader(cluster.work) == cluster.nodes[0]
        cluster.kill(victim)
        killed_at = time.monotonic()
        assert _job(job.pk).done < TOTAL, "the job ended before its node died: nothing tested"
    except BaseException:
        worker.stop()
        raise
    _finished_promptly(cluster, job, ids, worker, killed_at)
    assert cluster.leader(cluster.work) != victim


def test_a_bulk_replay_goes_on_at_once_when_its_node_dies_between_batches(on_cluster, celery_queue):
    """The node dies while the job waits for its next claim (the database slower than the
    broker: held here by a lock on that batch's first message). The job sees the death only
    when it next publishes, while it claims the batch after: the claim must not read the
    dead connection."""
    cluster = on_cluster
    ids = [m.pk for m in make_messages(TOTAL, queue="orders.dlq", died_in=cluster.work)]
    held = ids[2 * RATE]  # the third batch's first message
    job = _new_job(ids)
    with transaction.atomic():
        Message.objects.select_for_update().get(pk=held)
        worker = _start(job, celery_queue)
        try:
            wait_for(lambda: _job(job.pk).done >= 2 * RATE, 30, "two batches settled", 0.02)
            victim = _node_of(cluster, "dlq-replay-job")
            assert victim == cluster.nodes[0], "the job does not begin with node 1"
            time.sleep(0.5)  # the claim of the third batch waits for the lock, and so the job
            assert _job(job.pk).done == 2 * RATE
            # The node the job turns to next is slow to answer (frozen for a few seconds):
            # the claim after the third runs while the job opens its new connection.
            following = cluster.nodes[1]
            cluster.hang(following)
            cluster.kill(victim)
            killed_at = time.monotonic()
        except BaseException:
            worker.stop()
            raise
    try:
        time.sleep(3)
    finally:
        cluster.resume(following)
    _finished_promptly(cluster, job, ids, worker, killed_at)


def test_a_single_replay_whose_node_dies_before_the_confirm_says_so_and_a_retry_works(
    on_cluster,
):
    """Nodes 2 and 3 frozen, so the quorum queue has no majority and the replay, published
    through node 1, cannot be confirmed; node 1 is killed with the publish in hand."""
    cluster = on_cluster
    message = make_messages(1, queue="orders.dlq", died_in=cluster.work)[0]
    api = client_for(make_user("operator"), token=True)
    url = f"/api/v1/messages/{message.pk}/replay"
    body = {"target": "failed_queue", "reason": "node loss test"}
    for node in cluster.nodes[1:]:
        cluster.hang(node)
    answers = []
    replaying = threading.Thread(
        target=lambda: answers.append(api.post(url, body, content_type="application/json"))
    )
    replaying.start()
    try:
        wait_for(lambda: Message.objects.get(pk=message.pk).status == Status.REPLAYING, 20,
                 "the replay to publish")  # fmt: skip
        time.sleep(0.5)  # published, waiting for a confirm that cannot come
        cluster.kill(cluster.nodes[0])
        replaying.join(40)
    finally:
        for node in cluster.nodes[1:]:
            cluster.resume(node)
        replaying.join(40)
    first = answers[0].json()
    assert answers[0].status_code == 200, first
    assert first["outcome"] == Outcome.ERROR
    # An operator must learn that the message may be in the queue already.
    assert "may have stored it" in first["detail"], first
    assert "check the target queue" in first["detail"], first
    assert Message.objects.get(pk=message.pk).status == Status.PARKED
    shown = client_for(make_user("viewer")).get(f"/messages/{message.pk}/")
    assert "may have stored it" in shown.content.decode()

    # The second try goes through a live node, once the other two have a leader again.
    second = api.post(url, body, content_type="application/json").json()
    assert second["outcome"] == Outcome.CONFIRMED, second
    stored = Message.objects.get(pk=message.pk)
    assert (stored.status, stored.replay_count) == (Status.REPLAYED, 1)
    replays = Replay.objects.filter(message=message).order_by("id")
    assert [r.outcome for r in replays] == [Outcome.ERROR, Outcome.CONFIRMED]
    consumer = amqp.connect(cluster.url(), "dlq-tests")
    try:
        got = arrivals(consumer.channel(), cluster.work)
    finally:
        consumer.close()
    # At least the confirmed copy; the first may have survived its node too.
    assert replays[1].replay_id in {replay_id for _, replay_id in got}
    assert set(Counter(origin for origin, _ in got)) == {message.pk}
