"""A selection in words (dlq/messages/selections.py): every filter the list, the bulk review
and a job take, said as a reader says it, a group by its name and never its hash."""

from datetime import UTC, datetime

import pytest

from dlq.messages.selections import Name, describe, of_job
from tests.factories import make_messages

pytestmark = pytest.mark.django_db

MARCH = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)


def said(filters, count=None, **kwargs) -> str:
    return str(describe(filters, count, **kwargs))


def test_it_names_a_group_by_what_failed_not_its_hash():
    m = make_messages(2, queue="demo.payments.dlq", died_in="demo.payments", type="CapturePayment")
    m = m[0]
    text = said({"status": "parked", "group": m.group, "received_after": MARCH}, 26)
    assert text == (
        "26 parked messages of CapturePayment · rejected in demo.payments"
        " since 2025-03-10 12:00:00 UTC"
    )
    assert m.group not in text


def test_a_group_nothing_is_stored_of_keeps_its_fingerprint():
    assert said({"group": "c7cb0000aaaa1111"}) == "messages of group c7cb0000aaaa1111"


def test_each_filter_in_words():
    assert said({}) == "all messages"
    assert said({}, 0) == "0 messages"
    assert said({}, 1) == "1 message"
    assert said({"status": "discarded"}, 1_234) == "1,234 discarded messages"
    assert said({"queue": "orders.dlq"}) == "messages in orders.dlq"
    assert said({"queue": "orders.dlq", "vhost": "shop"}) == "messages in shop/orders.dlq"
    assert said({"vhost": "shop"}) == "messages in vhost shop"
    assert said({"message_type": "ChargeCard"}) == "messages of type ChargeCard"
    assert said({"exception_type": "KeyError"}) == "messages failing with KeyError"
    assert said({"reason": "expired"}) == "messages with death reason expired"
    assert said({"exchange": "orders.events", "routing_key": "order.created"}) == (
        "messages through exchange orders.events with routing key order.created"
    )
    assert said({"q": "card 4242"}) == "messages containing “card 4242”"


def test_time_ranges_say_their_zone():
    later = MARCH.replace(day=11)
    assert said({"received_after": MARCH}) == "messages since 2025-03-10 12:00:00 UTC"
    assert said({"received_before": later}) == "messages received before 2025-03-11 12:00:00 UTC"
    assert said({"received_after": MARCH, "received_before": later}) == (
        "messages received from 2025-03-10 12:00:00 UTC to before 2025-03-11 12:00:00 UTC"
    )


def test_many_filters_read_as_one_phrase():
    text = said({"status": "parked", "queue": "orders.dlq", "exception_type": "KeyError",
                 "q": "4242", "received_before": MARCH}, 7)  # fmt: skip
    assert text == (
        "7 parked messages failing with KeyError in orders.dlq"
        " received before 2025-03-10 12:00:00 UTC containing “4242”"
    )


def test_a_jobs_stored_filter_reads_back():
    """A job keeps its filter as JSON (times as text): the same words come out, and a job
    takes only the parked messages of it."""
    stored = {"queue": "orders.dlq", "received_before": "2025-03-10 12:00:00+00:00"}
    assert str(of_job(stored, 5)) == (
        "5 parked messages in orders.dlq received before 2025-03-10 12:00:00 UTC"
    )
    assert str(of_job(None, 3)) == "3 chosen messages"


def test_names_stay_names():
    """A page shows untrusted names its own safe way: they come apart from the words."""
    parts = describe({"queue": "<b>q</b>"}).parts
    assert Name("<b>q</b>") in parts and isinstance(parts[-1], Name)
