"""Redrive policies at the edges a user will hit (issue 28, point 7), on the real broker: a
route that reaches no queue, a vhost the console's user may not open, a policy edited while
its messages wait, retention purging a message a policy waits on, many vhosts. Each tick is
run in the test's process, at a time after the messages are due, as beat would run it."""

import logging
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, urlsplit

import pytest
from django.conf import settings
from django.db import connection

from dlq.actions import message as message_actions
from dlq.messages import retention, search
from dlq.models import Message, Status
from dlq.models.actions import Replay
from dlq.models.redrive import RedriveDue
from dlq.redrive import matching, policies, scheduler
from tests.factories import client_for, make_messages, make_user
from tests.topology import consumed

pytestmark = pytest.mark.django_db(transaction=True)


def _policy(match: dict, **changes):
    values = {"name": "flaky", "match": match, "target": "original", "delay_seconds": 1,
              "backoff": 2, "max_attempts": 3, **changes}  # fmt: skip
    return policies.save("admin", values, "a flaky downstream")


def _later() -> datetime:
    return datetime.now(UTC) + timedelta(seconds=30)


def _pages_answer(*paths: str) -> None:
    """What a user opens about it answers, no 500: pages, and the API with a token."""
    user = make_user("viewer")
    page, api = client_for(user), client_for(user, token=True)
    for path in paths:
        client = api if path.startswith("/api/") else page
        assert client.get(path).status_code == 200, path


def test_a_route_to_no_queue_keeps_the_policy_waiting_and_says_why(top, caplog):
    nowhere = top.exchange("nowhere", "direct")  # nothing bound
    message = make_messages(1, queue=top.name("dlq"), exchange=nowhere, routing_key="k")[0]
    policy = _policy({"queue": top.name("dlq")})
    later = _later()

    with caplog.at_level(logging.INFO, logger="dlq.redrive.scheduler"):
        assert scheduler.run_policy(policy, later) == 0

    assert f"redrive policy flaky waits: exchange {nowhere!r} routes 'k' to no queue" in caplog.text
    assert not Replay.objects.exists()
    assert Message.objects.get(pk=message.pk).status == Status.PARKED
    row = RedriveDue.objects.get(message=message)
    assert (row.attempt, row.next_at, row.exhausted) == (0, later + scheduler.GATE_RECHECK, False)
    # Said where an admin looks, since the tick that held it back; a tick that replays
    # clears it.
    waiting = f"exchange {nowhere!r} routes 'k' to no queue: nothing would receive the replay"
    shown = client_for(make_user("viewer"), token=True).get(f"/api/v1/policies/{policy.pk}")
    assert shown.json()["waiting"] == waiting
    since = datetime.fromisoformat(shown.json()["waiting_since"])
    assert abs(since - later) < timedelta(milliseconds=1)  # the API gives milliseconds
    page = client_for(make_user("viewer")).get("/policies/").content.decode()
    assert "waiting since" in page and "routes &#x27;k&#x27; to no queue" in page
    top.ch.queue_bind(top.queue("work"), nowhere, "k")
    consumed(top.ch, "/", top.name("work"))
    assert scheduler.run_policy(policy, later + timedelta(seconds=30)) == 1
    policy.refresh_from_db()
    assert (policy.waiting, policy.waiting_since) == ("", None)


def test_a_headers_exchange_is_followed_with_each_messages_headers(top, settings, caplog):
    # With no headers the walk found no queue: the policy published into the drained one.
    exchange = top.exchange("by-region", "headers")
    parked, other = top.queue("eu.dlq"), top.queue("us")
    top.ch.queue_bind(parked, exchange, arguments={"x-match": "all", "region": "eu"})
    top.ch.queue_bind(other, exchange, arguments={"x-match": "all", "region": "us"})
    settings.DLQ_QUEUES = [top.name("*.dlq")]
    loops, goes = (make_messages(1, queue=top.name("dlq"), exchange=exchange, routing_key="",
                                 headers={"region": region})[0]
                   for region in ("eu", "us"))  # fmt: skip
    policy = _policy({"queue": top.name("dlq")})

    with caplog.at_level(logging.WARNING, logger="dlq.redrive.scheduler"):
        assert scheduler.run_policy(policy, _later()) == 1

    assert f"gives up on message {loops.pk}: the route reaches {parked}" in caplog.text
    assert RedriveDue.objects.get(message=loops).exhausted
    assert Message.objects.get(pk=loops.pk).status == Status.PARKED
    assert Message.objects.get(pk=goes.pk).status == Status.REPLAYED
    assert top.ch.queue_declare(other, passive=True).method.message_count == 1


def test_a_vhost_the_consoles_user_may_not_open_is_left_waiting(vhosts, rabbit, unique, caplog):
    closed = vhosts.make("closed")
    ch = vhosts.channel(closed)
    ch.queue_declare(f"{unique}.work")
    message = make_messages(1, queue=f"{unique}.dlq", vhost=closed, died_in=f"{unique}.work")[0]
    # No consumer gate: the publisher's connection is what the broker refuses.
    policy = _policy({"vhost": closed}, target="failed_queue", require_consumers=False)
    vhosts.api("DELETE", f"/api/permissions/{quote(closed, safe='')}/"
                         f"{urlsplit(rabbit.url).username}")  # fmt: skip
    later = _later()

    with caplog.at_level(logging.INFO, logger="dlq.redrive.scheduler"):
        assert scheduler.run_policy(policy, later) == 0

    assert f"redrive policy flaky: no connection to vhost {closed}" in caplog.text
    assert "NOT_ALLOWED" in caplog.text
    assert not Replay.objects.exists()
    assert Message.objects.get(pk=message.pk).status == Status.PARKED
    row = RedriveDue.objects.get(message=message)
    assert (row.attempt, row.next_at) == (0, later + scheduler.GATE_RECHECK)  # no attempt spent
    policy.refresh_from_db()
    assert policy.waiting.startswith(f"no connection to vhost {closed!r}: ")
    _pages_answer(
        f"/messages/{message.pk}/",
        "/policies/",
        f"/api/v1/messages/{message.pk}",
        f"/api/v1/policies/{policy.pk}",
    )


def test_an_edit_of_the_cap_exhausts_or_reopens_the_waiting_messages():
    message = make_messages(1, queue="payments.dlq")[0]
    policy = _policy({"queue": "payments.dlq"}, delay_seconds=10, max_attempts=5)
    RedriveDue.objects.filter(message=message).update(attempt=2)  # two redrives came back
    values = {k: v for k, v in policies.describe(policy).items() if k not in ("id", "state")}

    policies.save("admin", {**values, "max_attempts": 2}, "enough", policy.pk)

    row = RedriveDue.objects.get(message=message)
    assert (row.exhausted, row.next_at) == (True, None)
    scheduler.tick(_later())
    assert not Replay.objects.exists()

    policies.save("admin", {**values, "max_attempts": 4, "backoff": 3}, "more", policy.pk)

    row = RedriveDue.objects.get(message=message)
    assert not row.exhausted and row.attempt == 2
    assert row.next_at == message.received_at + timedelta(seconds=10 * 3**2)


def test_a_message_another_policy_matches_is_taken_by_it_when_the_first_lets_go():
    message = make_messages(1, queue="payments.dlq")[0]
    first = _policy({"queue": "payments.dlq"})
    second = _policy({"queue": "payments.dlq"}, name="slow", delay_seconds=60)
    assert RedriveDue.objects.get(message=message).policy_id == first.pk

    values = {k: v for k, v in policies.describe(first).items() if k not in ("id", "state")}
    policies.save("admin", {**values, "match": {"queue": "elsewhere"}}, "narrower", first.pk)

    row = RedriveDue.objects.get(message=message)
    assert row.policy_id == second.pk
    assert row.next_at == message.received_at + timedelta(seconds=60)


def test_retention_takes_the_due_row_with_the_message_and_the_next_tick_is_fine(top):
    work = top.queue("work")
    gone, kept = make_messages(2, queue=top.name("dlq"), died_in=work)
    policy = _policy({"queue": top.name("dlq")}, target="failed_queue", require_consumers=False)
    message_actions.discard(gone.pk, "ops", "noise")  # while the policy waits on it
    assert RedriveDue.objects.filter(message=gone, next_at__isnull=False).exists()

    days = settings.DLQ_RETENTION_DAYS + 1
    assert retention.purge_messages(now=datetime.now(UTC) + timedelta(days=days)) == 1

    assert not RedriveDue.objects.filter(message_id=gone.pk).exists()
    assert scheduler.run_policy(policy, _later()) == 1  # the one left, and only it
    assert [r.message_id for r in Replay.objects.all()] == [kept.pk]
    assert Message.objects.get(pk=kept.pk).status == Status.REPLAYED


def test_a_policy_matching_a_vhost_acts_only_in_it(vhosts, unique):
    a, b = vhosts.make("a"), vhosts.make("b")
    in_a, in_b = vhosts.channel(a), vhosts.channel(b)
    work = f"{unique}.work"
    for ch in (in_a, in_b):
        ch.queue_declare(work)  # the same names in both vhosts
    mine, other = (make_messages(1, queue=f"{unique}.dlq", vhost=v, died_in=work)[0]
                   for v in (a, b))  # fmt: skip
    policy = _policy({"vhost": a}, target="failed_queue", require_consumers=False)
    assert list(RedriveDue.objects.values_list("message_id", flat=True)) == [mine.pk]

    assert scheduler.run_policy(policy, _later()) == 1

    assert Message.objects.get(pk=mine.pk).status == Status.REPLAYED
    assert Message.objects.get(pk=other.pk).status == Status.PARKED
    assert in_a.queue_declare(work, passive=True).method.message_count == 1
    assert in_b.queue_declare(work, passive=True).method.message_count == 0


def test_an_arrival_past_a_gap_in_the_ids_is_matched_on_the_next_tick():
    # Ids far above the matcher's mark (retention purged the past, rolled-back drains used
    # ids up, a test database was emptied): the next tick still reaches the arrival, where
    # it used to walk the gap BATCH ids a tick.
    policy = _policy({"queue": "gap.dlq"})
    with connection.cursor() as cursor:
        cursor.execute("SELECT setval(pg_get_serial_sequence('dlq_message', 'id'), %s)",
                       [search.indexed_upto() + 20 * matching.BATCH])  # fmt: skip
    arrival = make_messages(1, queue="gap.dlq")[0]
    search.catch_up()

    assert matching.match_arrivals() == 1

    row = RedriveDue.objects.get(message=arrival)
    assert (row.policy_id, row.attempt, row.exhausted) == (policy.pk, 0, False)
