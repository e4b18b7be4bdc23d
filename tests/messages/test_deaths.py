"""deaths.read on typed headers, for what RabbitMQ 3.10 cannot produce here."""

import hashlib
import json
from datetime import UTC, datetime

import pytest

from dlq.broker.codec import typed, typed_table
from dlq.messages import deaths


def _entry(queue, reason, count=1, exchange="", keys=(), time=1_700_000_000):
    return {
        "queue": queue,
        "reason": reason,
        "count": count,
        "exchange": exchange,
        "routing-keys": list(keys),
        "time": datetime.fromtimestamp(time, UTC),
    }


def test_it_prefers_the_last_death_headers_of_rabbitmq_3_13():
    headers = typed_table(
        {
            "x-death": [_entry("b", "expired"), _entry("a", "rejected", 2, "ex", ["k"])],
            "x-first-death-queue": "a",
            "x-first-death-reason": "rejected",
            "x-first-death-exchange": "ex",
            "x-last-death-queue": "c",
            "x-last-death-reason": "maxlen",
        }
    )
    death = deaths.read(headers)
    assert (death.failed_queue, death.reason, death.count) == ("c", "maxlen", 3)
    assert (death.original_exchange, death.original_routing_keys) == ("ex", ["k"])


def test_it_reads_a_non_utf8_first_death_exchange():
    headers = typed_table({"x-death": [_entry("q", "rejected", keys=["k"])]})
    headers["x-first-death-exchange"] = {"type": "longstr", "base64": "/3g="}
    assert deaths.read(headers).original_exchange == "\ufffdx"


def test_it_reads_counters_only_from_plain_digits():
    for junk in ("--5", "²", "1e3", "5.0", "٣", "9" * 5000, True, 2.5, [1]):
        assert deaths.read(typed_table({"retry-count": junk})).delivery_count is None, junk
    assert deaths.read(typed_table({"retry-count": " 7 "})).delivery_count == 7
    assert deaths.read(typed_table({"x-retries": -2})).delivery_count == -2


def test_it_ignores_x_delivery_count_of_a_quorum_parking_queue():
    headers = typed_table({"x-delivery-count": 4, "retry-count": 2})
    assert deaths.read(headers, parking_queue_is_quorum=False).delivery_count == 4
    assert deaths.read(headers, parking_queue_is_quorum=True).delivery_count == 2
    assert deaths.read(typed_table({"x-delivery-count": 4}), True).delivery_count is None


def test_it_takes_the_exception_type_of_a_trace_without_a_cause():
    headers = typed_table({"x-exception-stacktrace": "java.io.IOException: disk full\n\tat X"})
    death = deaths.read(headers)
    assert death.exception_type == "java.io.IOException"
    assert death.exception_message == ""


def test_it_takes_the_exception_that_carries_the_spring_exception_message():
    trace = (
        "org.springframework.amqp.support.converter.MessageConversionException: bad content\n"
        "\tat org.springframework.amqp.X.fromMessage(X.java:340)\n"
        "Caused by: com.fasterxml.jackson.core.JsonParseException: Unexpected '}'\n"
    )

    def kind(message):
        headers = {"x-exception-stacktrace": trace, "x-exception-message": message}
        return deaths.read(typed_table(headers)).exception_type

    assert (
        kind("bad content")
        == "org.springframework.amqp.support.converter.MessageConversionException"
    )
    assert kind("Unexpected '}'") == "com.fasterxml.jackson.core.JsonParseException"
    wrapped = "o.s.a.r.s.ListenerExecutionFailedException: Listener threw\nCaused by: " + trace
    headers = {"x-exception-stacktrace": wrapped, "x-exception-message": "something else"}
    assert deaths.read(typed_table(headers)).exception_type == (
        "org.springframework.amqp.support.converter.MessageConversionException"
    )


def test_it_finds_the_queue_in_masstransit_and_nservicebus_addresses():
    cases = {
        "rabbitmq://broker/submit_order": "submit_order",
        "rabbitmq://broker:5672/sales%2Feu/submit_order?bind=true": "submit_order",
        "rabbitmq://broker/": "",
        "not a url": "not a url",
    }
    for address, queue in cases.items():
        death = deaths.read(typed_table({"MT-Reason": "fault", "MT-Fault-InputAddress": address}))
        assert death.failed_queue == queue, address
    death = deaths.read(typed_table({"NServiceBus.FailedQ": "Billing"}))
    assert (death.failed_queue, death.original_routing_keys) == ("Billing", ["Billing"])


def test_it_never_fails_on_junk_framework_headers():
    headers = {
        "x-exception-stacktrace": typed({"not": "text"}),
        "x-original-exchange": typed(7),
        "MT-Fault-ExceptionType": typed({"a": 1}),
        "NServiceBus.ExceptionInfo.ExceptionType": typed([1, 2]),
        "NServiceBus.EnclosedMessageTypes": typed(None),
        "X-Message-Stamp-App\\ErrorDetailsStamp": typed("[" * 100_000),
        "X-Message-Stamp-App\\RedeliveryStamp": typed('[1, "x", {"retryCount": "3"}]'),
        "task": typed(None),
        "retries": typed("2"),
    }
    death = deaths.read(headers)
    assert death.exception_type == ""
    assert death.original_exchange is None  # Spring's header was there, but not text
    assert death.delivery_count == 2
    assert len(death.group("/")) == 16


def test_it_groups_on_failure_not_on_message():
    def group(**headers):
        return deaths.read(typed_table(headers)).group("/")

    one = group(**{"x-death": [_entry("q", "rejected")], "MT-Fault-Message": "order 1"})
    two = group(**{"x-death": [_entry("q", "rejected", 9)], "MT-Fault-Message": "order 2"})
    assert one == two
    assert one != group(**{"x-death": [_entry("q", "expired")]})
    assert one != group(**{"x-death": [_entry("q", "rejected")], "type": "App\\Other"})


def test_a_group_never_spans_vhosts_and_vhost_slash_keeps_its_old_ids():
    death = deaths.read(typed_table({"x-death": [_entry("q", "rejected")]}))
    assert death.group("billing") != death.group("orders") != death.group("/")
    # 0.4's key, without the vhost: stored groups of vhost / keep their ids.
    key = "\x1f".join(["q", "rejected", "", ""])
    assert death.group("/") == hashlib.sha1(key.encode()).hexdigest()[:16]


def test_the_first_death_time_is_the_named_entrys_not_the_oldest():
    """A client-supplied entry older than the real first death never passes for it."""
    forged = _entry("somewhere", "expired", time=1_600_000_000)
    real = _entry("work", "rejected", time=1_700_000_000)
    headers = typed_table(
        {
            "x-death": [real, forged],
            "x-first-death-queue": "work",
            "x-first-death-reason": "rejected",
        }
    )
    assert deaths.read(headers).first_death_at == datetime.fromtimestamp(1_700_000_000, UTC)
    # Without x-first-death-* (3.x sets none over an existing x-death) no entry is named:
    # the oldest listed one may be the client's, so there is no first-death time.
    del headers["x-first-death-queue"], headers["x-first-death-reason"]
    assert deaths.read(headers).first_death_at is None


def test_the_message_type_falls_back_to_the_amqp_type_property():
    assert deaths.read({}, properties={"type": "billing.InvoiceDue"}).message_type == (
        "billing.InvoiceDue"
    )
    celery = typed_table({"task": "orders.tasks.charge"})
    assert deaths.read(celery, properties={"type": "ignored"}).message_type == "orders.tasks.charge"
    assert deaths.read({}, properties={"type": {"base64": "/w=="}}).message_type == ""  # not UTF-8
    typed_one = deaths.read({}, properties={"type": "billing.InvoiceDue"})
    assert deaths.read({}).group("/") != typed_one.group("/")


def test_symfony_retries_are_the_highest_redelivery_stamp_not_the_last():
    stamps = [{"retryCount": 1, "redeliveredAt": "2026-11-24T10:00:01+00:00"},
              {"retryCount": 3, "redeliveredAt": "2026-11-24T10:00:09+00:00"},
              {"retryCount": 0, "redeliveredAt": "2026-11-24T10:00:10+00:00"}]  # fmt: skip
    key = "X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\RedeliveryStamp"
    headers = typed_table({key: json.dumps(stamps)})
    assert deaths.read(headers).delivery_count == 3


@pytest.mark.parametrize(
    ("headers", "message_type"),
    [
        ({"MT-MessageType": "urn:message:Sales:SubmitOrder;urn:message:Sales:IOrder"},
         "urn:message:Sales:SubmitOrder"),  # MassTransit's raw serializers
        ({"NServiceBus.EnclosedMessageTypes": "Sales.PlaceOrder, Sales, Version=1.0.0.0"},
         "Sales.PlaceOrder"),
        ({"type": "App\\Message\\SendWelcomeEmail"}, "App\\Message\\SendWelcomeEmail"),
        ({"__TypeId__": "com.example.Order"}, "com.example.Order"),
        ({"task": "proj.tasks.charge", "id": "t-1", "retries": 0}, "proj.tasks.charge"),
    ],
)  # fmt: skip
def test_each_framework_names_the_type_without_its_failure_headers(headers, message_type):
    """A type header says the type whether or not its framework also wrote why it failed."""
    died = typed_table({**headers, "x-death": [_entry("work", "rejected")]})
    assert deaths.read(died).message_type == message_type
