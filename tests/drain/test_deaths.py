"""What the drainer stores about a death, for each way RabbitMQ itself dead-letters a message."""

from datetime import UTC, datetime

import pytest

from tests.conftest import drain_once, publish
from tests.factories import client_for, make_user
from tests.topology import get, last_reject, only, reject, stored, wait_depth, x_death

pytestmark = pytest.mark.django_db(transaction=True)


def dead_lettered(channel, park):
    """The message the broker dead-letters into `park` (in its own time, after an expiry, a
    limit or a reject): wait for it there, drain it, and return its stored row."""
    wait_depth(channel, park, 1)
    drain_once([park])
    return only(park)


def _now_second():
    return datetime.now(UTC).replace(microsecond=0)


def test_it_stores_a_rejected_message(channel, top):
    park, dlx = top.parking()
    orders = top.exchange("orders", "topic")
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    channel.queue_bind(work, orders, "order.*")
    before = _now_second()
    publish(channel, orders, "order.created", b"order 1", message_id="m-1")
    reject(channel, work)

    drain_once([park])

    m = only(park)
    after = datetime.now(UTC)
    assert m.death_reason == "rejected"
    assert m.failed_queue == work
    assert m.original_exchange == orders
    assert m.original_routing_keys == ["order.created"]
    assert m.original_routing_key == "order.created"
    assert m.exchange == dlx
    assert m.routing_key == "order.created"
    assert m.death_count == 1
    assert m.delivery_count is None
    assert before <= m.first_death_at <= after
    assert m.message_id == "m-1"
    assert x_death(m) == [(work, "rejected", 1)]
    assert m.headers["x-first-death-queue"] == {"type": "longstr", "value": work}
    assert m.drain_note == ""


def test_it_stores_a_message_expired_by_its_own_ttl(channel, top):
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    publish(channel, "", work, b"late", expiration="20", message_id="m-ttl")

    m = dead_lettered(channel, park)
    assert m.death_reason == "expired"
    assert m.failed_queue == work
    assert m.original_exchange == ""
    assert m.original_routing_keys == [work]
    assert "expiration" not in m.properties
    assert m.properties["message_id"] == "m-ttl"
    entry = m.headers["x-death"]["value"][0]["value"]
    assert entry["original-expiration"] == {"type": "longstr", "value": "20"}
    assert entry["reason"] == {"type": "longstr", "value": "expired"}


def test_it_stores_a_message_expired_by_the_queue_ttl(channel, top):
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx, "x-message-ttl": 20})
    publish(channel, "", work, b"late")

    m = dead_lettered(channel, park)
    assert m.death_reason == "expired"
    assert m.failed_queue == work
    assert m.death_count == 1
    assert "original-expiration" not in m.headers["x-death"]["value"][0]["value"]
    assert "expiration" not in m.properties


@pytest.mark.parametrize(
    ("overflow", "dead_body", "kept_body"),
    [("drop-head", b"first", b"second"), ("reject-publish-dlx", b"second", b"first")],
)
def test_it_stores_a_message_dropped_by_a_length_limit(
    channel, top, overflow, dead_body, kept_body
):
    park, dlx = top.parking()
    work = top.queue(
        "work", **{"x-dead-letter-exchange": dlx, "x-max-length": 1, "x-overflow": overflow}
    )
    publish(channel, "", work, b"first")
    publish(channel, "", work, b"second")

    m = dead_lettered(channel, park)
    assert bytes(m.body) == dead_body
    assert m.death_reason == "maxlen"
    assert m.failed_queue == work
    assert m.original_routing_keys == [work]
    assert m.death_count == 1
    assert get(channel, work)[2] == kept_body


def test_it_stores_a_message_past_a_quorum_delivery_limit(rabbit, channel, top):
    park, dlx = top.parking()
    work = top.queue(
        "work",
        durable=True,
        **{"x-queue-type": "quorum", "x-delivery-limit": 1, "x-dead-letter-exchange": dlx},
    )
    publish(channel, "", work, b"poison", delivery_mode=2)
    # The quorum queue counts each delivery, then gives up; 4.x sets no count on the first.
    for expected in (None, 1) if rabbit.v4 else (0, 1):
        method, props, _ = get(channel, work)
        assert (props.headers or {}).get("x-delivery-count", {}).get("value") == expected
        channel.basic_nack(method.delivery_tag, requeue=True)

    m = dead_lettered(channel, park)
    assert m.death_reason == "delivery_limit"
    assert m.failed_queue == work
    assert m.original_exchange == ""
    assert m.original_routing_keys == [work]
    assert m.death_count == 1
    assert m.delivery_count is None  # the dead-lettered copy carries no x-delivery-count
    assert "x-delivery-count" not in m.headers


def test_it_reads_a_ttl_retry_loop_from_the_first_death(channel, top):
    """work -> retry (TTL) -> work -> retry -> work -> parked: repeats move to the front."""
    orders = top.exchange("orders", "topic")
    retry_x = top.exchange("retry-x", "fanout")
    park = top.queue("dlq")
    work = top.queue("work", **{"x-dead-letter-exchange": retry_x})
    retry = top.queue(
        "retry",
        **{"x-message-ttl": 20, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": work},
    )
    channel.queue_bind(work, orders, "order.#")
    channel.queue_bind(retry, retry_x)
    before = _now_second()
    publish(channel, orders, "order.created", b"retry me")
    reject(channel, work)
    reject(channel, work)  # back from the retry queue
    # The last attempt gives up: the retry exchange now leads to the parking queue.
    wait_depth(channel, work, 1)
    last_reject(channel, work, retry_x, retry, park)

    m = dead_lettered(channel, park)
    assert x_death(m) == [(work, "rejected", 3), (retry, "expired", 2)]
    assert m.death_count == 5
    assert m.failed_queue == work
    assert m.death_reason == "rejected"
    # The oldest listed entry is the retry queue, reached through the retry exchange: the
    # original route is the first death's (x-first-death-*), never x-death[-1].
    assert m.headers["x-death"]["value"][-1]["value"]["exchange"]["value"] == retry_x
    assert m.original_exchange == orders
    assert m.original_routing_keys == ["order.created"]
    assert before <= m.first_death_at <= datetime.now(UTC)


def test_it_takes_the_original_route_from_the_first_death_when_a_queue_repeats(channel, top):
    """A rejected, B rejected, A rejected gives x-death [A count 2, B count 1]."""
    src = top.exchange("src")
    a_to_b = top.exchange("a-x", "fanout")
    park = top.queue("dlq")
    a = top.queue("a", **{"x-dead-letter-exchange": a_to_b})
    b = top.queue("b", **{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": a})
    channel.queue_bind(a, src, "k")
    channel.queue_bind(b, a_to_b)
    publish(channel, src, "k", b"ping-pong")
    reject(channel, a)
    reject(channel, b)
    last_reject(channel, a, a_to_b, b, park)

    m = dead_lettered(channel, park)
    assert x_death(m) == [(a, "rejected", 2), (b, "rejected", 1)]
    assert m.death_count == 3
    assert m.failed_queue == a
    assert m.original_exchange == src
    assert m.original_routing_keys == ["k"]
    last = m.headers["x-death"]["value"][-1]["value"]
    assert (last["exchange"]["value"], last["routing-keys"]["value"][0]["value"]) == (a_to_b, "k")


def test_it_counts_deliveries_from_a_retry_counter_republished_to_the_tail(channel, top):
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    publish(channel, "", work, b"job", message_id="job-1")
    for attempt in range(3):  # the service republishes to the tail with retry-count + 1
        method, props, body = get(channel, work)
        props.headers = dict(props.headers or {})
        props.headers["retry-count"] = {"type": "int32", "value": attempt + 1}
        channel.basic_publish("", work, body, props)
        channel.basic_ack(method.delivery_tag)
    reject(channel, work)  # and finally gives up

    drain_once([park])

    m = only(park)
    assert m.delivery_count == 3
    assert m.death_count == 1
    assert m.death_reason == "rejected"
    assert m.message_id == "job-1"


def test_it_counts_deliveries_from_a_client_set_x_delivery_count_on_a_classic_queue(channel, top):
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    publish(channel, "", work, b"job", {"x-delivery-count": {"type": "int64", "value": 4}})
    reject(channel, work)

    drain_once([park])

    m = only(park)
    assert m.delivery_count == 4
    assert m.headers["x-delivery-count"] == {"type": "int64", "value": 4}


def test_it_keeps_cc_routing_keys_as_original_routing_keys(channel, top):
    park, dlx = top.parking()
    src = top.exchange("src")
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    other = top.queue("other")
    channel.queue_bind(work, src, "k")
    channel.queue_bind(work, src, "c1")
    channel.queue_bind(other, src, "c2")
    publish(channel, src, "k", b"fan", {"CC": ["c1", "c2"], "BCC": ["b1"]})
    reject(channel, work)

    drain_once([park])

    m = only(park)  # routed to work by two keys, stored once
    assert m.original_exchange == src
    assert m.original_routing_keys == ["k", "c1", "c2"]
    assert m.original_routing_key == "k"
    assert m.routing_key == "k"
    assert "BCC" not in m.headers
    entry = m.headers["x-death"]["value"][0]["value"]
    assert [k["value"] for k in entry["routing-keys"]["value"]] == ["k", "c1", "c2"]


def test_it_keeps_the_original_routing_keys_when_the_dead_letter_key_replaces_them(
    rabbit, channel, top
):
    src = top.exchange("src")
    dlx = top.exchange("dlx")
    park = top.queue("dlq")
    channel.queue_bind(park, dlx, "parked")
    work = top.queue(
        "work", **{"x-dead-letter-exchange": dlx, "x-dead-letter-routing-key": "parked"}
    )
    channel.queue_bind(work, src, "k")
    publish(channel, src, "k", b"moved", {"CC": ["c1"]})
    reject(channel, work)

    drain_once([park])

    m = only(park)
    assert m.exchange == dlx
    assert m.routing_key == "parked"
    assert m.original_exchange == src
    assert m.original_routing_keys == ["k", "c1"]
    assert m.failed_queue == work
    # 3.x removes CC when it replaces the key; 4.x keeps it (a replay never sends it).
    assert ("CC" in m.headers) == rabbit.v4


def test_it_routes_a_default_exchange_message_back_to_its_queue(channel, top):
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    publish(channel, "", work, b"direct")
    reject(channel, work)

    drain_once([park])

    m = only(park)
    assert m.original_exchange == ""
    assert m.original_routing_keys == [work]
    assert m.failed_queue == work


def test_it_stores_a_message_published_straight_into_the_parking_queue(channel, top):
    park = top.queue("dlq")
    publish(channel, "", park, b"no history", {"note": "by hand"})

    drain_once([park])

    m = only(park)
    assert m.death_count == 0
    assert m.death_reason == ""
    assert m.failed_queue == ""
    assert m.original_exchange is None  # unknown: the operator must choose a target
    assert m.original_routing_keys == []
    assert m.first_death_at is None
    assert m.delivery_count is None
    assert m.exchange == ""
    assert m.routing_key == park
    assert m.drain_note == ""


def test_it_stores_a_message_with_a_non_utf8_routing_key(channel, top):
    park, dlx = top.parking()
    fan = top.exchange("fan", "fanout")
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    channel.queue_bind(work, fan)
    channel.basic_publish(fan, b"\xffkey\x00", b"odd key")
    reject(channel, work)

    drain_once([park])

    m = only(park)
    assert bytes(m.body) == b"odd key"
    assert m.routing_key == "\ufffdkey\ufffd"
    assert m.original_routing_keys == ["\ufffdkey\ufffd"]
    assert m.death_reason == "rejected"
    key = m.headers["x-death"]["value"][0]["value"]["routing-keys"]["value"][0]
    assert key == {"type": "longstr", "base64": "/2tleQA="}  # the bytes themselves are kept
    assert m.drain_note == ""


def _forged(queue="q", reason="rejected", **fields):
    table = {"queue": queue, "reason": reason, **fields}
    return {"type": "table", "value": {k: v for k, v in table.items() if v is not None}}


def _s(text):
    return {"type": "longstr", "value": text}


def _entry(queue, reason, count, exchange="", keys=()):
    return _forged(
        _s(queue),
        _s(reason),
        count={"type": "int64", "value": count},
        exchange=_s(exchange),
        **{"routing-keys": {"type": "array", "value": [_s(k) for k in keys]}},
    )


def test_it_never_fails_on_a_forged_or_malformed_x_death(channel, top):
    park = top.queue("dlq")
    array = {"type": "array"}
    forged = {
        "not-a-list": {"x-death": _s("rejected from somewhere")},
        "a-table": {"x-death": {"type": "table", "value": {"queue": _s("q")}}},
        "junk-entries": {
            "x-death": {
                **array,
                "value": [
                    _s("junk"),
                    {"type": "int32", "value": 5},
                    _forged(None, _s("expired")),  # no queue
                    _forged({"type": "int32", "value": 1}, _s("expired")),  # queue of a number
                    {**array, "value": []},
                ],
            }
        },
        "wrong-types": {
            "x-death": {
                **array,
                "value": [
                    _forged(
                        _s("q1"),
                        {"type": "int8", "value": 1},
                        count=_s("7"),
                        time=_s("yesterday"),
                        exchange={"type": "int32", "value": 3},
                        **{"routing-keys": _s("k")},
                    ),
                    _forged(
                        _s("q0"),
                        _s("expired"),
                        count={"type": "int64", "value": -4},
                        **{
                            "routing-keys": {
                                **array,
                                "value": [_s("k0"), {"type": "bool", "value": True}],
                            }
                        },
                    ),
                ],
            },
            "x-first-death-queue": {"type": "int32", "value": 1},
            "x-first-death-exchange": {"type": "table", "value": {}},
        },
        "first-death-names-no-entry": {
            "x-death": {
                **array,
                "value": [_entry("q2", "rejected", 1, "ex2", ["k2"]), _entry("q1", "expired", 2)],
            },
            "x-first-death-queue": _s("gone"),
            "x-first-death-reason": _s("rejected"),
        },
        "huge-counts": {
            "x-death": {**array, "value": [_entry("q", "rejected", 2**62, "e", ["k"])] * 2},
            "retry-count": _s("9" * 5000),
            "x-delivery-count": _s("²"),
        },
    }
    for message_id, headers in forged.items():
        publish(channel, "", park, message_id.encode(), headers, message_id=message_id)

    drain_once([park])

    rows = {m.message_id: m for m in stored(park, len(forged))}
    for m in rows.values():
        assert m.drain_note == "", m.message_id  # read as usual, not stored as unreadable
        assert bytes(m.body) == m.message_id.encode()
        assert len(m.group) == 16
    for name in ("not-a-list", "a-table", "junk-entries"):
        m = rows[name]
        assert (m.death_count, m.failed_queue, m.death_reason) == (0, "", ""), name
        assert (m.original_exchange, m.original_routing_keys) == (None, []), name
    m = rows["wrong-types"]
    assert m.death_count == 2  # an entry of a bad count still records one death
    assert (m.failed_queue, m.death_reason) == ("q1", "")
    assert m.first_death_at is None
    assert m.original_exchange is None  # the oldest entry names no exchange: unknown
    assert m.original_routing_keys == ["k0"]
    m = rows["first-death-names-no-entry"]
    assert (m.failed_queue, m.death_reason, m.death_count) == ("q2", "rejected", 3)
    assert m.original_routing_keys == []  # the oldest listed entry had no routing keys
    m = rows["huge-counts"]
    assert m.death_count == 2**31 - 1
    assert m.delivery_count is None


def test_it_continues_a_client_supplied_x_death_the_way_the_broker_does(rabbit, channel, top):
    """RabbitMQ 3.10 keeps a well-typed x-death it was given and puts the real death first;
    4.x ignores it ("x- headers belong to the broker") and starts a fresh history."""
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    history = {"type": "array", "value": [_entry("earlier", "expired", 5, "ex0", ["k0"])]}
    publish(channel, "", work, b"again", {"x-death": history})
    reject(channel, work)

    drain_once([park])

    m = only(park)
    if rabbit.v4:
        assert x_death(m) == [(work, "rejected", 1)]
        assert (m.failed_queue, m.death_reason, m.death_count) == (work, "rejected", 1)
        assert m.headers["x-first-death-queue"]["value"] == work
        assert (m.original_exchange, m.original_routing_keys) == ("", [work])
        return
    assert x_death(m) == [(work, "rejected", 1), ("earlier", "expired", 5)]
    assert (m.failed_queue, m.death_reason, m.death_count) == (work, "rejected", 6)
    # The broker sets no x-first-death-* over an existing x-death: the oldest entry is the
    # best account of where the message first went.
    assert "x-first-death-queue" not in m.headers
    assert (m.original_exchange, m.original_routing_keys) == ("ex0", ["k0"])


def test_it_records_the_first_death_time_of_the_entry_the_broker_named(channel, top):
    park = top.queue("dlq")
    old, new = 1_700_000_000, 1_700_000_600
    entries = [
        _forged(_s("b"), _s("rejected"), time={"type": "timestamp", "value": new}),
        _forged(_s("a"), _s("expired"), time={"type": "timestamp", "value": old}),
    ]
    history = {"type": "array", "value": entries}
    named = {"x-first-death-queue": "b", "x-first-death-reason": "rejected"}
    publish(channel, "", park, b"named", {"x-death": history, **named})
    publish(channel, "", park, b"unnamed", {"x-death": history})

    drain_once([park])

    with_name, without = stored(park, 2)
    assert with_name.first_death_at == datetime.fromtimestamp(new, UTC)  # not the oldest
    assert without.first_death_at is None  # no entry named: none passes for the first death
    # Empty wherever it is shown: the API's list and detail, and the message page.
    api, page = client_for(make_user("viewer"), token=True), client_for(make_user("viewer"))
    listed = {m["id"]: m for m in api.get(f"/api/v1/messages?queue={park}").json()["results"]}
    assert listed[with_name.pk]["first_death_at"] == "2023-11-14T22:23:20Z"
    assert listed[without.pk]["first_death_at"] is None
    assert api.get(f"/api/v1/messages/{without.pk}").json()["first_death_at"] is None
    html = page.get(f"/messages/{without.pk}/").content.decode()
    assert "<dt>First death</dt><dd>–</dd>" in html


def test_it_groups_by_failure_and_never_by_body(channel, top):
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    other = top.queue("other", **{"x-dead-letter-exchange": dlx})
    sends = [
        (work, b'{"order": 1}', "KeyError", "a"),
        (work, b'{"order": 2, "lines": [1, 2, 3]}', "KeyError", "b"),
        (work, b"\x00\xff binary", "KeyError", "c"),
        (work, b'{"order": 1}', "ValueError", "d"),
        (other, b'{"order": 1}', "KeyError", "e"),
    ]
    for queue, body, error, message_id in sends:
        headers = {"MT-Fault-ExceptionType": error, "MT-Fault-Message": f"failed {message_id}"}
        publish(channel, "", queue, body, headers, message_id=message_id)
        reject(channel, queue)

    drain_once([park])

    group = {m.message_id: m.group for m in stored(park, len(sends))}
    assert group["a"] == group["b"] == group["c"]  # same failure, any body, any message
    assert group["d"] != group["a"]  # another exception type
    assert group["e"] != group["a"]  # another failed queue
    assert len({group["a"], group["d"], group["e"]}) == 3
