"""Failure details of the frameworks that park messages themselves, and the console's lineage."""

import gzip
import json

import pytest

from tests.conftest import drain_once, publish
from tests.topology import only, reject, stored

pytestmark = pytest.mark.django_db(transaction=True)

SPRING_TRACE = (
    "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method"
    " 'public void com.example.OrderListener.handle(com.example.Order)' threw exception\n"
    "\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer"
    ".wrapToListenerExecutionFailedExceptionIfNeeded(AbstractMessageListenerContainer.java:1738)\n"
    "\tSuppressed: java.io.IOException: close failed\n"
    "\t\tCaused by: java.net.SocketException: reset\n"
    "Caused by: java.lang.IllegalStateException: no stock for order 42\n"
    "\tat com.example.OrderListener.handle(OrderListener.java:17)\n"
    "\t... 12 more\n"
)
SYMFONY_ERROR = "X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\ErrorDetailsStamp"
SYMFONY_REDELIVERY = "X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\RedeliveryStamp"
# What MassTransit and NServiceBus put on a message they move to their error queue.
MASSTRANSIT_FAULT = {
    "MT-Reason": "fault",
    "MT-Fault-ExceptionType": "System.InvalidOperationException",
    "MT-Fault-Message": "Order 42 has no lines",
    "MT-Fault-StackTrace": "   at Sales.SubmitOrderConsumer.Consume(...) in C.cs:line 20",
    "MT-Fault-MessageType": "urn:message:Sales.Contracts:SubmitOrder",
    "MT-Fault-ConsumerType": "Sales.SubmitOrderConsumer",
    "MT-Fault-InputAddress": "rabbitmq://localhost/sales/submit_order?temporary=false",
    "MT-Fault-RetryCount": 3,
    "MT-Fault-Timestamp": "2024-05-01T12:00:00.0000000Z",
}

# MassTransit's default serializer on RabbitMQ: the type is only in the body's envelope.
MASSTRANSIT_JSON = "application/vnd.masstransit+json"
SUBMIT_ORDER = "urn:message:Sales.Contracts:SubmitOrder"


def masstransit_envelope(message: dict, **fields) -> dict:
    """An envelope as MassTransit 8's System.Text.Json serializer writes it (nulls left out):
    ids and addresses, then messageType, then the message itself."""
    return {
        "messageId": "2c000000-3a1b-0015-5e8f-08dc69e1a6b2",
        "conversationId": "2c000000-3a1b-0015-8f0e-08dc69e1a6b3",
        "sourceAddress": "rabbitmq://localhost/sales/BUILD_AGENT_1_Sales_bus_ky6yyydhe4?temporary=true",
        "destinationAddress": "rabbitmq://localhost/sales/submit_order",
        "messageType": [SUBMIT_ORDER, "urn:message:Sales.Contracts:IOrderCommand"],
        "message": message,
        "sentTime": "2024-05-01T12:00:00.1234567Z",
        "headers": {},
        "host": {
            "machineName": "BUILD-AGENT-1",
            "processName": "Sales",
            "processId": 4711,
            "assembly": "Sales",
            "assemblyVersion": "1.0.0.0",
            "frameworkVersion": "8.0.4",
            "massTransitVersion": "8.2.2.0",
            "operatingSystemVersion": "Unix 6.1.0.21",
        },
        **fields,
    }


NSERVICEBUS_FAILURE = {
    "NServiceBus.FailedQ": "Sales@BUILD-AGENT-1",
    "NServiceBus.TimeOfFailure": "2024-05-01 12:00:00:000000 Z",
    "NServiceBus.ExceptionInfo.ExceptionType": "System.TimeoutException",
    "NServiceBus.ExceptionInfo.Message": "The database did not answer",
    "NServiceBus.ExceptionInfo.StackTrace": "System.TimeoutException: The database...",
    "NServiceBus.EnclosedMessageTypes": (
        "Sales.Messages.PlaceOrder, Sales.Messages, Version=1.0.0.0, Culture=neutral,"
        " PublicKeyToken=null;Sales.Messages.IOrderCommand, Sales.Messages"
    ),
    "NServiceBus.MessageId": "0b0c6a0e-2a63-4a4e-b7b4-b0f300d3f6a1",
}


def test_it_reads_spring_amqp_republished_failures(channel, top):
    park = top.queue("dlq")
    headers = {
        "x-exception-stacktrace": SPRING_TRACE,
        "x-exception-message": "no stock for order 42",
        "x-original-exchange": "orders",
        "x-original-routingKey": "order.created",
        "__TypeId__": "com.example.Order",
    }
    publish(channel, "", park, b'{"id": 42}', headers, content_type="application/json")

    drain_once([park])

    m = only(park)
    assert m.exception_type == "java.lang.IllegalStateException"  # the cause, not the wrapper
    assert m.exception_message == "no stock for order 42"
    assert m.exception_stacktrace == SPRING_TRACE
    assert m.message_type == "com.example.Order"
    assert m.original_exchange == "orders"
    assert m.original_routing_keys == ["order.created"]
    assert m.death_count == 0
    assert m.failed_queue == ""


def test_it_prefers_x_death_over_spring_original_headers(channel, top):
    park, dlx = top.parking()
    src = top.exchange("src")
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    channel.queue_bind(work, src, "k")
    spring = {"x-original-exchange": "elsewhere", "x-original-routingKey": "other"}
    publish(channel, src, "k", b"{}", {**spring, "x-exception-message": "boom"})
    reject(channel, work)

    drain_once([park])

    m = only(park)
    assert (m.original_exchange, m.original_routing_keys) == (src, ["k"])
    assert m.failed_queue == work
    assert m.exception_message == "boom"


def test_it_reads_masstransit_error_queue_headers(channel, top):
    park = top.queue("submit_order_error")
    publish(
        channel, "", park, b"{}", MASSTRANSIT_FAULT, content_type="application/vnd.masstransit+json"
    )

    drain_once([park])

    m = only(park)
    assert m.exception_type == "System.InvalidOperationException"
    assert m.exception_message == "Order 42 has no lines"
    assert m.exception_stacktrace.startswith("   at Sales.SubmitOrderConsumer")
    assert m.message_type == "urn:message:Sales.Contracts:SubmitOrder"
    assert m.death_reason == "fault"
    assert m.failed_queue == "submit_order"
    assert (m.original_exchange, m.original_routing_keys) == ("", ["submit_order"])
    assert m.delivery_count == 3


def test_it_reads_the_type_of_a_masstransit_envelope_the_broker_dead_lettered(channel, top):
    """No fault headers (MassTransit did not move it): the envelope names the type."""
    park, dlx = top.parking()
    work = top.queue("submit_order", **{"x-dead-letter-exchange": dlx})
    order = {"orderId": 42, "lines": [{"sku": "A-1", "quantity": 2}]}
    big = {"orderId": 43, "attachment": "x" * 2_000_000}  # far past the part that is read
    bodies = {
        "envelope": json.dumps(masstransit_envelope(order)).encode(),
        "big message": json.dumps(masstransit_envelope(big)).encode(),
        "crlf-indented": json.dumps(masstransit_envelope(order), indent=2)
        .replace("\n", "\r\n")
        .encode(),
    }
    for name, body in bodies.items():
        properties = {"content_type": MASSTRANSIT_JSON, "delivery_mode": 2}
        publish(
            channel, "", work, body, {"MT-Activity-Id": "00-4bf9-01"}, message_id=name, **properties
        )
        reject(channel, work)

    drain_once([park])

    rows = stored(park, len(bodies))
    for m in rows:
        assert m.message_type == SUBMIT_ORDER, m.message_id
        assert (m.failed_queue, m.death_reason, m.drain_note) == (work, "rejected", "")
    assert len({m.group for m in rows}) == 1  # one type, one failure: one group


def test_a_body_that_is_not_a_masstransit_envelope_names_no_type_and_drains(channel, top):
    """Broken, hostile or other bodies: stored whole, no type, no drain note."""
    park = top.queue("submit_order_dlq")
    envelope = masstransit_envelope({"orderId": 42})
    good = json.dumps(envelope).encode()
    deep = b'{"messageId": ' + b"[" * 200_000 + b"]" * 200_000 + b', "messageType": ["urn:x"]}'
    late = {"padding": "p" * 20_000, **envelope}  # messageType past the part that is read
    cases = {
        "not json": (b'{"messageType": ["urn:message:A:B"', {}),
        "not an object": (b'[{"messageType": ["urn:message:A:B"]}]', {}),
        "a string": (json.dumps({**envelope, "messageType": SUBMIT_ORDER}).encode(), {}),
        "not strings": (json.dumps({**envelope, "messageType": [42, SUBMIT_ORDER]}).encode(), {}),
        "empty list": (json.dumps({**envelope, "messageType": []}).encode(), {}),
        "not utf-8": (b'{"messageId": "\xff", "messageType": ["urn:message:A:B"]}', {}),
        "deep": (deep, {}),
        "huge number": (b'{"messageId": ' + b"9" * 10_000 + b', "messageType": ["urn:x"]}', {}),
        "late type": (json.dumps(late).encode(), {}),
        "nested only": (json.dumps({"message": {"messageType": ["urn:x"]}}).encode(), {}),
        "gzip": (gzip.compress(good), {"content_encoding": "gzip"}),
        "json, not masstransit": (good, {"content_type": "application/json"}),
        "empty": (b"", {}),
    }
    for name, (body, properties) in cases.items():
        properties = {"content_type": MASSTRANSIT_JSON, **properties}
        publish(channel, "", park, body, message_id=name, **properties)

    drain_once([park])

    rows = stored(park, len(cases))
    for m, (name, (body, _)) in zip(rows, cases.items(), strict=True):
        assert (m.message_id, m.message_type, m.drain_note) == (name, "", "")
        assert bytes(m.body) == body


def test_it_reads_nservicebus_enclosed_types_without_an_exception(channel, top):
    """The broker dead-lettered it (NServiceBus did not move it): its type is still named."""
    park, dlx = top.parking()
    work = top.queue("Sales", **{"x-dead-letter-exchange": dlx})
    sent = {
        "NServiceBus.MessageId": "0b0c6a0e-2a63-4a4e-b7b4-b0f300d3f6a1",
        "NServiceBus.MessageIntent": "Send",
        "NServiceBus.ConversationId": "6f5e2d3c-1b0a-4e9f-8d7c-b0f300d3f6a2",
        "NServiceBus.CorrelationId": "0b0c6a0e-2a63-4a4e-b7b4-b0f300d3f6a1",
        "NServiceBus.OriginatingEndpoint": "ClientUI",
        "NServiceBus.OriginatingMachine": "BUILD-AGENT-1",
        "NServiceBus.ContentType": "application/json",
        "NServiceBus.EnclosedMessageTypes": NSERVICEBUS_FAILURE["NServiceBus.EnclosedMessageTypes"],
        "NServiceBus.Version": "8.1.6",
        "NServiceBus.TimeSent": "2024-05-01 12:00:00:000000 Z",
    }
    publish(channel, "", work, b'{"OrderId": "42"}', sent, content_type="application/json")
    reject(channel, work)

    drain_once([park])

    m = only(park)
    assert m.message_type == "Sales.Messages.PlaceOrder"
    assert (m.exception_type, m.failed_queue, m.death_reason) == ("", work, "rejected")


def test_it_reads_nservicebus_error_queue_headers(channel, top):
    park = top.queue("error")
    publish(channel, "", park, b"<PlaceOrder/>", NSERVICEBUS_FAILURE)

    drain_once([park])

    m = only(park)
    assert m.exception_type == "System.TimeoutException"
    assert m.exception_message == "The database did not answer"
    assert m.exception_stacktrace == "System.TimeoutException: The database..."
    assert m.message_type == "Sales.Messages.PlaceOrder"
    assert m.failed_queue == "Sales"
    assert (m.original_exchange, m.original_routing_keys) == ("", ["Sales"])


def test_it_reads_symfony_messenger_stamps(channel, top):
    park = top.queue("failed")
    error = {
        "exceptionClass": "Symfony\\Component\\Mailer\\Exception\\TransportException",
        "exceptionCode": 0,
        "exceptionMessage": "Connection to smtp:25 refused",
        "flattenException": {"class": "TransportException", "traceAsString": "#0 Mailer.php(42)"},
    }
    redeliveries = [
        {"retryCount": n, "redeliveredAt": f"2024-05-01T12:00:0{n}+00:00"} for n in (1, 2, 3)
    ]
    headers = {
        "type": "App\\Message\\SendWelcomeEmail",
        "Content-Type": "application/json",
        "X-Message-Stamp-Symfony\\Component\\Messenger\\Stamp\\BusNameStamp": '[{"busName":"bus"}]',
        SYMFONY_REDELIVERY: json.dumps(redeliveries),
        SYMFONY_ERROR: json.dumps([error]),
    }
    publish(channel, "", park, b'{"userId": 7}', headers)
    broken = {"type": "App\\Message\\Other", SYMFONY_ERROR: "[" * 5000}
    publish(channel, "", park, b"{}", broken)

    drain_once([park])

    m, junk = stored(park, 2)
    assert m.exception_type == "Symfony\\Component\\Mailer\\Exception\\TransportException"
    assert m.exception_message == "Connection to smtp:25 refused"
    assert m.exception_stacktrace == "#0 Mailer.php(42)"
    assert m.message_type == "App\\Message\\SendWelcomeEmail"
    assert m.delivery_count == 3  # the last RedeliveryStamp
    assert m.original_exchange is None  # a transport name is not a route: operator chooses
    assert (junk.message_type, junk.exception_type, junk.drain_note) == (
        "App\\Message\\Other",
        "",
        "",
    )


def test_it_takes_the_amqp_type_property_when_no_framework_names_a_type(channel, top):
    park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    publish(channel, "", work, b"{}", type="billing.InvoiceDue")
    publish(channel, "", work, b"{}", {"__TypeId__": "com.acme.Invoice"}, type="ignored")
    publish(channel, "", work, b"{}")
    for _ in range(3):
        reject(channel, work)

    drain_once([park])

    typed, spring, untyped = stored(park, 3)
    assert typed.message_type == "billing.InvoiceDue"
    assert spring.message_type == "com.acme.Invoice"  # the framework's own name first
    assert untyped.message_type == ""
    assert len({typed.group, spring.group, untyped.group}) == 3  # a type is part of a group


def test_it_reads_celery_task_headers(channel, top):
    park, dlx = top.parking()
    work = top.queue("celery", **{"x-dead-letter-exchange": dlx})
    base = {
        "lang": "py",
        "task": "proj.tasks.charge",
        "shadow": None,
        "eta": None,
        "expires": None,
        "group": None,
        "timelimit": [None, None],
        "root_id": "r-1",
        "parent_id": None,
        "argsrepr": "(42,)",
        "kwargsrepr": "{}",
        "origin": "gen1@host",
        "ignore_result": False,
    }
    for task_id, retries in (("t-1", 2), ("t-2", None)):
        headers = {**base, "id": task_id, "retries": retries}
        publish(channel, "", work, b"[[42], {}, {}]", headers, correlation_id=task_id)
        reject(channel, work)  # the task raised Reject(requeue=False)

    drain_once([park])

    first, second = stored(park, 2)
    assert first.message_type == second.message_type == "proj.tasks.charge"
    assert first.delivery_count == 2
    assert second.delivery_count is None  # retries was void
    assert first.headers["retries"] == {"type": "int32", "value": 2}
    assert second.headers["retries"] == {"type": "void", "value": None}
    assert (first.failed_queue, first.death_reason) == (work, "rejected")
    assert (first.original_exchange, first.original_routing_keys) == ("", [work])
    assert (first.exception_type, first.exception_message, first.exception_stacktrace) == (
        "",
        "",
        "",
    )
    assert first.group == second.group


def test_it_links_a_message_that_comes_back_to_its_earlier_lives(channel, top):
    park = top.queue("dlq")
    publish(channel, "", park, b"life 1")
    drain_once([park])
    (one,) = stored(park, 1)

    publish(
        channel,
        "",
        park,
        b"life 2",
        {"dlq-origin-id": {"type": "int64", "value": one.pk}, "dlq-replay-count": 1},
    )
    drain_once([park])
    _, two = stored(park, 2)

    publish(channel, "", park, b"life 3", {"dlq-origin-id": str(two.pk), "dlq-replay-count": "2"})
    drain_once([park])
    _, _, three = stored(park, 3)

    assert (one.previous_id, one.lineage_id, one.replay_count) == (None, None, 0)
    assert (two.previous_id, two.lineage_id, two.replay_count) == (one.pk, one.pk, 1)
    assert (three.previous_id, three.lineage_id, three.replay_count) == (two.pk, one.pk, 2)
    assert three.root_id == two.root_id == one.root_id == one.pk


def test_it_ignores_an_unknown_or_junk_origin_id(channel, top):
    park = top.queue("dlq")
    junk = {
        "unknown": {"type": "int64", "value": 2**62},
        "zero": 0,
        "negative": -5,
        "text": "abc",
        "superscript": "²",
        "huge-text": "9" * 5000,
        "bool": True,
        "table": {"id": 1},
        "void": None,
        "not-utf8": {"type": "longstr", "base64": "/w=="},
    }
    for name, origin in junk.items():
        headers = {"dlq-origin-id": origin, "dlq-replay-count": "x" if name == "text" else 1}
        publish(channel, "", park, name.encode(), headers, message_id=name)

    drain_once([park])

    rows = stored(park, len(junk))
    for m in rows:
        assert (m.previous_id, m.lineage_id) == (None, None), m.message_id
        assert m.drain_note == "", m.message_id
        assert m.replay_count == (0 if m.message_id == "text" else 1), m.message_id
