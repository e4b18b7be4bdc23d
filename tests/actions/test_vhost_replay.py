"""Replays act in the message's own vhost: single and bulk, original, failed queue, custom
targets and replay overrides. A message is never published into another vhost, even when the
exchange it asks for exists only there (contract: "Many vhosts, one cluster")."""

from urllib.parse import quote

import pytest

from dlq.actions import message as message_actions
from dlq.actions import replay
from dlq.broker.publisher import ConfirmPublisher
from dlq.drain.estate import Estate
from dlq.jobs import control, running
from dlq.models import Message, Status
from dlq.models.actions import JobItem, JobStatus, Outcome, ReplayOverride
from tests.arrivals import arrivals
from tests.drainproc import wait_for
from tests.factories import client_for, make_message, make_messages, make_user, post
from tests.topology import depth, get, wait_depth

pytestmark = pytest.mark.django_db(transaction=True)
KEY = "order.created"


def _service(ch, prefix: str) -> dict:
    """A service's exchange and work queue, rejecting into a parking queue (one vhost)."""
    names = {k: f"{prefix}.{k}" for k in ("events", "work", "dlx", "park")}
    ch.exchange_declare(names["events"], "direct")
    ch.exchange_declare(names["dlx"], "fanout")
    ch.queue_declare(names["park"])
    ch.queue_bind(names["park"], names["dlx"])
    ch.queue_declare(names["work"], arguments={"x-dead-letter-exchange": names["dlx"]})
    ch.queue_bind(names["work"], names["events"], KEY)
    return names


def _elsewhere(ch, prefix: str) -> str:
    """The same exchange and work queue in another vhost: the wrong place to replay into."""
    ch.exchange_declare(f"{prefix}.events", "direct")
    ch.queue_declare(f"{prefix}.work")
    ch.queue_bind(f"{prefix}.work", f"{prefix}.events", KEY)
    return f"{prefix}.work"


def _park_one(ch, names: dict, body: bytes) -> None:
    ch.basic_publish(names["events"], KEY, body)
    method, _, _ = get(ch, names["work"])
    ch.basic_reject(method.delivery_tag, requeue=False)
    wait_depth(ch, names["park"], 1)


@pytest.fixture
def estate(vhosts, channel, top, unique):
    """Vhost A holds a service whose parked message was drained by the console; vhost B
    and the default vhost hold its namesakes, with their own work queues."""
    a, b = vhosts.make("a"), vhosts.make("b")
    in_a, in_b = vhosts.channel(a), vhosts.channel(b)
    names = _service(in_a, unique)
    _park_one(in_a, names, b'{"order": 1}')
    top.cleanup["exchanges"].append(f"{unique}.events")
    top.cleanup["queues"].append(_elsewhere(channel, unique))
    _elsewhere(in_b, unique)
    assert Estate(patterns=[f"{a}/{names['park']}"], once=True).run() == 0
    [message] = Message.objects.all()
    assert message.vhost == a
    return {"a": a, "b": b, "in_a": in_a, "in_b": in_b, "names": names, "message": message}


def _nothing_arrived_elsewhere(estate, channel):
    work = estate["names"]["work"]
    assert depth(estate["in_b"], work) == 0
    assert depth(channel, work) == 0  # the default vhost


@pytest.mark.parametrize("target", ["original", "failed_queue", "custom"])
def test_a_replay_publishes_into_the_vhost_it_was_drained_from(estate, channel, target):
    names, message = estate["names"], estate["message"]
    chosen = {"exchange": names["events"], "routing_key": KEY} if target == "custom" else target
    result = message_actions.replay_one(message.pk, chosen, "frank", "fixed")
    assert (result.outcome, result.detail) == (Outcome.CONFIRMED, "")
    _, props, body = get(estate["in_a"], names["work"])
    assert body == b'{"order": 1}'
    assert props.headers["dlq-origin-id"]["value"] == message.pk
    _nothing_arrived_elsewhere(estate, channel)


@pytest.mark.parametrize("how", ["original", "custom", "replay_target"])
def test_an_exchange_that_exists_only_in_other_vhosts_is_never_reached(
    estate, channel, top, unique, how
):
    """The replay fails in the message's vhost; the namesake exchanges of vhost B and of the
    default vhost, with their bound queues, receive nothing."""
    names, message, in_b = estate["names"], estate["message"], estate["in_b"]
    exchange, chosen = names["events"], "original"
    if how == "replay_target":  # "original" follows a target to an exchange A lacks
        exchange = top.name("only-elsewhere")
        top.cleanup["exchanges"].append(exchange)
        for ch in (channel, in_b):
            ch.exchange_declare(exchange, "fanout")
            ch.queue_bind(names["work"], exchange)
        make_override(f"{estate['a']}/{names['park']}", exchange, KEY)
    else:  # the exchange is deleted in A: it now exists only in B and the default vhost
        estate["in_a"].exchange_delete(exchange)
        if how == "custom":
            chosen = {"exchange": exchange, "routing_key": KEY}

    result = message_actions.replay_one(message.pk, chosen, "frank", "fixed")

    assert result.outcome == Outcome.ERROR
    assert f"no exchange '{exchange}' in vhost '{estate['a']}'" in result.detail
    message.refresh_from_db()
    assert message.status == Status.PARKED
    _nothing_arrived_elsewhere(estate, channel)


def make_override(pattern: str, exchange: str, routing_key: str) -> None:
    answer = client_for(make_user("admin"), token=True).post(
        "/api/v1/replay-targets",
        {"queue_pattern": pattern, "exchange": exchange, "routing_key": routing_key,
         "reason": "the real origin"},
        content_type="application/json",
    )  # fmt: skip
    assert answer.status_code == 201, answer.content


def test_a_job_over_two_vhosts_lands_each_message_in_its_own(vhosts, channel, top, unique):
    a, b = vhosts.make("a"), vhosts.make("b")
    in_a, in_b = vhosts.channel(a), vhosts.channel(b)
    work, park = f"{unique}.work", f"{unique}.dlq"
    for ch in (in_a, in_b):
        ch.queue_declare(work)
    top.queue("work")  # a namesake in the default vhost: must stay empty
    # Interleaved, so that batches of 1000 hold messages of both vhosts.
    ids = {a: [], b: []}
    for vhost, n in ((a, 700), (b, 600), (a, 500)):
        ids[vhost] += [m.pk for m in make_messages(n, queue=park, died_in=work, vhost=vhost)]
    job = control.create_job("frank", "replay", filters={"queue": park}, target="failed_queue",
                          reason="spans vhosts")  # fmt: skip
    assert job.total == 1800

    assert running.run_job(job.pk) == JobStatus.DONE

    job.refresh_from_db()
    assert (job.done, job.failed, job.outcomes) == (1800, 0, {"confirmed": 1800})
    for ch, vhost in ((in_a, a), (in_b, b)):
        got = [origin for origin, _ in arrivals(ch, work)]
        assert sorted(got) == sorted(ids[vhost])  # each exactly once, in its own vhost
    assert depth(channel, work) == 0
    assert set(Message.objects.values_list("status", flat=True)) == {Status.REPLAYED}


def test_a_job_opens_its_vhosts_connections_before_it_locks_any_message(vhosts, unique):
    """Opening a connection can take a slow node's whole timeout: never while a claim's
    transaction holds its messages locked (an operator's edit or discard would wait)."""
    from django.db import connection

    a, b = vhosts.make("a"), vhosts.make("b")
    work, park = f"{unique}.work", f"{unique}.dlq"
    for vhost in (a, b):
        vhosts.channel(vhost).queue_declare(work)
        make_messages(3, queue=park, died_in=work, vhost=vhost)
    opened = []

    def factory(vhost):
        opened.append((vhost, connection.in_atomic_block))
        return running._publisher(vhost)

    job = control.create_job("frank", "replay", filters={"queue": park}, target="failed_queue",
                          reason="two vhosts")  # fmt: skip
    assert running.run_job(job.pk, publisher_factory=factory) == JobStatus.DONE
    assert sorted(opened) == sorted([(a, False), (b, False)])
    assert set(Message.objects.values_list("status", flat=True)) == {Status.REPLAYED}


def _listed(vhosts, vhost: str, name: str) -> list[str]:
    """The broker's connections named `name` (the client's connection_name) in `vhost`."""
    listed = vhosts.api("GET", f"/api/vhosts/{quote(vhost, safe='')}/connections")
    return [c["name"] for c in listed if c["client_properties"].get("connection_name") == name]


def test_a_vhost_connection_dropped_while_idle_is_opened_again(
    vhosts, unique, monkeypatch, settings
):
    """A job's connection to a vhost idles while the other vhosts' messages are published
    (a rate-limited job: for minutes), and the broker drops one that misses its heartbeats.
    The job opens it again and goes on: before, that vhost's messages ended in error and
    the job stopped, to be resumed only later."""
    a, b = vhosts.make("a"), vhosts.make("b")
    work, park = f"{unique}.work", f"{unique}.dlq"
    channels = {vhost: vhosts.channel(vhost) for vhost in (a, b)}
    for ch in channels.values():
        ch.queue_declare(work)
    ids = {vhost: [m.pk for m in make_messages(n, queue=park, died_in=work, vhost=vhost)]
           for vhost, n in ((a, 4), (b, 3))}  # fmt: skip
    published, real = [], running._publish

    def then_b_is_dropped(job, batch, publishers):
        results = real(job, batch, publishers)
        if not published:  # a's batch is out; b's connection has idled all along
            wait_for(lambda: not _listed(vhosts, b, "idle-job"), 30, "the broker to drop b's")
        published.append(len(results))
        return results

    def factory(vhost):  # heartbeats of a second: the broker drops an idle one in seconds
        return ConfirmPublisher(settings.DLQ_BROKER_URL, "idle-job", vhost=vhost,
                                     heartbeat=1)  # fmt: skip

    monkeypatch.setattr(running, "_publish", then_b_is_dropped)
    job = control.create_job("frank", "replay", filters={"queue": park}, target="failed_queue",
                          rate_per_s=4, reason="b idles")  # fmt: skip

    assert running.run_job(job.pk, publisher_factory=factory) == JobStatus.DONE

    assert published == [4, 3]
    job.refresh_from_db()
    assert (job.done, job.failed, job.outcomes) == (7, 0, {"confirmed": 7})
    for vhost, ch in channels.items():
        assert sorted(origin for origin, _ in arrivals(ch, work)) == sorted(ids[vhost])
    assert set(Message.objects.values_list("status", flat=True)) == {Status.REPLAYED}


def test_a_job_fails_the_messages_of_a_vhost_the_broker_refuses_and_goes_on(
    vhosts, channel, unique
):
    """A vhost deleted since its messages were drained: those fail (left parked, with the
    reason), the other vhost's are replayed; the job finishes instead of waiting for ever."""
    a, gone = vhosts.make("a"), vhosts.make("gone")
    in_a = vhosts.channel(a)
    work, park = f"{unique}.work", f"{unique}.dlq"
    in_a.queue_declare(work)
    lost = [m.pk for m in make_messages(3, queue=park, died_in=work, vhost=gone)]
    kept = [m.pk for m in make_messages(4, queue=park, died_in=work, vhost=a)]
    vhosts.delete(gone)
    job = control.create_job("frank", "replay", ids=lost + kept, target="failed_queue",
                          reason="one vhost is gone")  # fmt: skip

    assert running.run_job(job.pk) == JobStatus.DONE

    job.refresh_from_db()
    assert (job.done, job.failed, job.outcomes) == (4, 3, {"confirmed": 4, "error": 3})
    details = JobItem.objects.filter(message_id__in=lost).values_list("outcome", flat=True)
    assert set(details) == {Outcome.ERROR}
    assert set(Message.objects.filter(pk__in=lost).values_list("status", flat=True)) == {
        Status.PARKED
    }
    assert sorted(o for o, _ in arrivals(in_a, work)) == sorted(kept)


def test_a_replay_target_names_its_vhost_and_a_bare_one_means_the_default(vhosts, settings):
    a = vhosts.make("a")
    in_a = make_message(queue="orders.dlq", vhost=a)
    in_default = make_message(queue="orders.dlq", vhost="/")
    make_override(f"{a}/orders.*", "a.events", "a.key")
    make_override("orders.dlq", "default.events", "default.key")

    assert replay.resolve(in_a, "original") == replay.Route("original", "a.events", "a.key")
    assert replay.resolve(in_default, "original") == replay.Route(
        "original", "default.events", "default.key"
    )
    assert replay.override_for(in_a).queue_pattern == f"{a}/orders.*"


@pytest.mark.parametrize("pattern", ["/orders.dlq", "billing/", "bad%zz/orders.dlq", "a/ "])
def test_a_replay_override_pattern_that_names_no_queue_is_refused(pattern):
    answer = client_for(make_user("admin"), token=True).post(
        "/api/v1/replay-targets",
        {"queue_pattern": pattern, "exchange": "x", "routing_key": "k", "reason": "r"},
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert "queue_pattern" in answer.json()["errors"]


def test_the_overrides_page_refuses_such_a_pattern_on_the_form():
    data = {"new-queue_pattern": "billing/", "new-exchange": "x", "new-routing_key": "k",
            "new-reason": "r"}  # fmt: skip
    answer = post(client_for(make_user("admin")), "/replay-overrides/add/", data)
    assert answer.status_code == 400
    assert "has an empty part" in answer.content.decode()
    assert not ReplayOverride.objects.exists()


def test_the_route_preview_reads_the_bindings_of_the_messages_vhost(estate, channel):
    names, message = estate["names"], estate["message"]
    estate["in_a"].queue_declare(f"{names['work']}.audit")
    estate["in_a"].queue_bind(f"{names['work']}.audit", names["events"], KEY)
    preview = client_for(make_user("viewer"), token=True).get(
        f"/api/v1/messages/{message.pk}/route?target=original"
    )
    assert preview.status_code == 200, preview.content
    # A's two bound queues; B's and the default vhost's namesakes are not A's route.
    assert preview.json()["queues"] == sorted([names["work"], f"{names['work']}.audit"])
