"""A small demo topology, and a varied set of messages dead-lettered through it.

Everything is named PREFIX.something (default "demo"); the parking queues match the default
DLQ_QUEUES globs, the work queues do not:

    PREFIX.orders (topic exchange) -> PREFIX.orders (queue)      -DLX-> PREFIX.orders.dlq
    PREFIX.payments -> PREFIX.payments.retry (TTL, back to work)  -> PREFIX.payments.parking
    PREFIX.shipping (quorum, x-delivery-limit 2)                   -DLX-> PREFIX.shipping.dead
    PREFIX.invoices (MassTransit endpoint)                         -> PREFIX.invoices_error
    PREFIX.notifications (NServiceBus endpoint)                    -> PREFIX.notifications_error

The demo plays the failing consumers itself: it rejects the orders, retries the payments
through the TTL loop and then parks them, and nacks the shipments (requeue) until the
quorum queue dead-letters them. Declarations are idempotent; every run adds a new set.
Headers go through dlq.broker.codec because pika cannot encode floats.
"""

import gzip
import json
import re
import time
import uuid
from datetime import UTC, datetime

from dlq.broker import amqp, codec
from dlq.broker.properties import properties_to_json
from dlq.messages.deaths import x_death_entries

PAYMENT_RETRIES = 3
RETRY_TTL_MS = 50
DELIVERY_LIMIT = 2
XSS = "<script>alert(1)</script>"
_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")


class DemoError(Exception):
    """The demo could not run (bad prefix, broker refused a declaration, timeout)."""


def names(prefix: str) -> dict:
    if not _PREFIX.match(prefix):
        raise DemoError(f"prefix {prefix!r}: use letters, digits, '.', '_' or '-'")
    p = prefix
    return {
        "orders_exchange": f"{p}.orders",
        "orders": f"{p}.orders",
        "orders_dlx": f"{p}.orders.dlx",
        "orders_dlq": f"{p}.orders.dlq",
        "payments": f"{p}.payments",
        "payments_retry": f"{p}.payments.retry",
        "payments_parking": f"{p}.payments.parking",
        "shipping": f"{p}.shipping",
        "shipping_dead": f"{p}.shipping.dead",
        "invoices": f"{p}.invoices",
        "invoices_error": f"{p}.invoices_error",
        "notifications": f"{p}.notifications",
        "notifications_error": f"{p}.notifications_error",
    }


def queues_of(prefix: str) -> list[str]:
    n = names(prefix)
    return [n[k] for k in n if k not in ("orders_exchange", "orders_dlx")]


def exchanges_of(prefix: str) -> list[str]:
    n = names(prefix)
    return [n["orders_exchange"], n["orders_dlx"], n["invoices"], n["invoices_error"]]


def declare(ch, n: dict) -> None:
    ch.exchange_declare(n["orders_exchange"], "topic", durable=True)
    ch.exchange_declare(n["orders_dlx"], "fanout", durable=True)
    ch.queue_declare(n["orders_dlq"], durable=True)
    ch.queue_bind(n["orders_dlq"], n["orders_dlx"])
    ch.queue_declare(
        n["orders"], durable=True, arguments={"x-dead-letter-exchange": n["orders_dlx"]}
    )
    ch.queue_bind(n["orders"], n["orders_exchange"], "order.#")

    # A TTL retry loop: rejected -> retry queue -> (TTL) -> back to work; parked after N.
    ch.queue_declare(
        n["payments"],
        durable=True,
        arguments={
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": n["payments_retry"],
        },
    )
    ch.queue_declare(
        n["payments_retry"],
        durable=True,
        arguments={
            "x-message-ttl": RETRY_TTL_MS,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": n["payments"],
        },
    )
    ch.queue_declare(n["payments_parking"], durable=True)

    ch.queue_declare(n["shipping_dead"], durable=True)
    ch.queue_declare(
        n["shipping"],
        durable=True,
        arguments={
            "x-queue-type": "quorum",
            "x-delivery-limit": DELIVERY_LIMIT,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": n["shipping_dead"],
        },
    )

    # MassTransit: an exchange and a queue per endpoint, and <queue>_error likewise.
    for name in (n["invoices"], n["invoices_error"]):
        ch.exchange_declare(name, "fanout", durable=True)
        ch.queue_declare(name, durable=True)
        ch.queue_bind(name, name)
    # NServiceBus: the endpoint's queue and its error queue, reached by the default exchange.
    ch.queue_declare(n["notifications"], durable=True)
    ch.queue_declare(n["notifications_error"], durable=True)


def _publish(ch, exchange, key, body: bytes, headers=None, **properties) -> None:
    typed = None
    if headers is not None:
        typed = {
            k: v if isinstance(v, dict) and "type" in v else codec.typed(v)
            for k, v in headers.items()
        }
    properties.setdefault("delivery_mode", 2)
    properties.setdefault("message_id", str(uuid.uuid4()))
    properties.setdefault("timestamp", int(time.time()))
    ch.basic_publish(exchange, key, body, amqp.make_properties(properties, typed), mandatory=True)


def _order(run: str, number: int) -> dict:
    return {
        "order_id": f"ord-{run}-{number}",
        "customer": {"id": f"cus-{381 + number}", "email": f"customer{number}@example.com"},
        "items": [
            {"sku": "TSHIRT-M-BLUE", "qty": 2, "price": "19.99"},
            {"sku": "MUG-WHITE", "qty": 1, "price": "8.50"},
        ],
        "total": "48.48",
        "currency": "EUR",
    }


def _json(value) -> bytes:
    return json.dumps(value, indent=2).encode()


def _orders(ch, n: dict, run: str) -> dict:
    """Publish the orders and play the inventory service that rejects them."""
    ex, common = n["orders_exchange"], {"app_id": "shop-api", "type": "OrderPlaced"}
    json_type = {"content_type": "application/json", **common}
    _publish(
        ch, ex, "order.created", _json(_order(run, 1)),
        {"tenant": "acme", "unit-price": 19.99, "weight-kg": {"type": "float", "value": 1.75},
         "attempt": 1},
        correlation_id=f"checkout-{run}-1", **json_type,
    )  # fmt: skip
    _publish(
        ch, ex, "order.created", gzip.compress(_json(_order(run, 2))), {"tenant": "acme"},
        content_encoding="gzip", **json_type,
    )  # fmt: skip
    _publish(
        ch, ex, "order.created", bytes(range(256)) + b"\x00\xff\xfe protobuf-ish",
        {"tenant": "globex", "schema": "orders.v3.OrderPlaced"},
        content_type="application/x-protobuf", **common,
    )  # fmt: skip
    _publish(
        ch, ex, "order.note", XSS.encode(), {"customer-note": XSS, "tenant": "initech"},
        content_type="text/html", app_id="shop-api", type="OrderNote",
    )  # fmt: skip
    _publish(
        ch, ex, "order.created", _json(_order(run, 3)),
        {"CC": ["order.audit", "order.billing"], "tenant": "acme"}, **json_type,
    )  # fmt: skip
    for i in (4, 5):  # per-message TTL 0: expired on arrival, dead-lettered as "expired"
        _publish(
            ch, ex, "order.reminder", _json(_order(run, i)), {"tenant": "acme"},
            expiration="0", **json_type,
        )  # fmt: skip
    rejected = 0
    while (got := ch.basic_get(n["orders"])) and got[0]:
        ch.basic_reject(got[0].delivery_tag, requeue=False)
        rejected += 1

    # Spring AMQP's RepublishMessageRecoverer: the listener failed, the framework republished
    # the message to the dead-letter exchange with the exception in headers (no x-death).
    trace = (
        "org.springframework.amqp.support.converter.MessageConversionException: "
        "Failed to convert Message content\n"
        "\tat org.springframework.amqp.support.converter.AbstractJackson2MessageConverter"
        ".fromMessage(AbstractJackson2MessageConverter.java:340)\n"
        "\tat com.example.shop.OrderListener.onOrder(OrderListener.java:57)\n"
        "Caused by: com.fasterxml.jackson.core.JsonParseException: Unexpected character "
        "('}' (code 125)): expected a value\n"
    )
    broken = f'{{"order_id": "ord-{run}-6", "total": }}'.encode()
    _publish(
        ch, n["orders_dlx"], "order.created", broken,
        {"x-exception-message": "Failed to convert Message content",
         "x-exception-stacktrace": trace,
         "x-original-exchange": n["orders_exchange"],
         "x-original-routingKey": "order.created"},
        content_type="application/json", app_id="shop-api",
    )  # fmt: skip
    return {"rejected": rejected, "expired": 2, "Spring AMQP republish": 1}


def _payments(ch, n: dict, run: str, deadline: float) -> dict:
    """Play a payment worker that fails, retries through the TTL queue, then parks."""
    for i in (1, 2):
        body = {"payment_id": f"pay-{run}-{i}", "order_id": f"ord-{run}-{i}", "amount": "48.48"}
        _publish(
            ch, "", n["payments"], _json(body), {"tenant": "acme"},
            content_type="application/json", app_id="payments", type="CapturePayment",
        )  # fmt: skip
    parked = 0
    while parked < 2:
        if time.monotonic() > deadline:
            raise DemoError(f"payments were not parked in time ({parked} of 2)")
        method, props, body = ch.basic_get(n["payments"])
        if method is None:
            time.sleep(0.01)
            continue
        headers = props.headers or {}
        tries = sum(
            e["count"]
            for e in x_death_entries(headers)
            if e["queue"] == n["payments"] and e["reason"] == "rejected"
        )
        if tries < PAYMENT_RETRIES:
            ch.basic_reject(method.delivery_tag, requeue=False)
            continue
        headers = dict(headers)
        headers["retry-count"] = codec.typed(tries)
        headers["error"] = codec.typed("PaymentGatewayTimeout: no answer from the gateway in 5 s")
        ch.basic_publish(
            "",
            n["payments_parking"],
            body,
            amqp.make_properties(properties_to_json(props), headers),
            mandatory=True,
        )
        ch.basic_ack(method.delivery_tag)
        parked += 1
    return {f"rejected x{PAYMENT_RETRIES}, then parked by the worker": parked}


def _shipping(ch, n: dict, run: str, deadline: float) -> dict:
    """Nack (requeue) the shipments until the quorum queue dead-letters them."""
    for i in (1, 2):
        body = {"shipment_id": f"shp-{run}-{i}", "carrier": "DHL", "weight_kg": 1.2}
        _publish(
            ch, "", n["shipping"], _json(body), {"tenant": "acme", "warehouse": "BER-1"},
            content_type="application/json", app_id="fulfilment", type="ShipOrder",
        )  # fmt: skip
    while True:
        if time.monotonic() > deadline:
            raise DemoError("shipments were not dead-lettered in time")
        method, _, _ = ch.basic_get(n["shipping"])
        if method is not None:
            ch.basic_nack(method.delivery_tag, requeue=True)
            continue
        if not ch.queue_declare(n["shipping"], passive=True).method.message_count:
            break
        time.sleep(0.01)
    return {f"delivery_limit (nacked with requeue past x-delivery-limit {DELIVERY_LIMIT})": 2}


def _invoices(ch, n: dict, run: str) -> dict:
    """MassTransit moved a faulted message to <queue>_error, with MT-Fault-* headers."""
    for i in (1, 2):
        message_id = str(uuid.uuid4())
        envelope = {
            "messageId": message_id,
            "conversationId": str(uuid.uuid4()),
            "sourceAddress": "rabbitmq://localhost/billing_api",
            "destinationAddress": f"rabbitmq://localhost/{n['invoices']}",
            "messageType": ["urn:message:Billing.Contracts:SubmitInvoice"],
            "message": {"invoiceNumber": f"INV-{run}-{i}", "total": 120.5, "lines": 3},
            "sentTime": datetime.now(UTC).isoformat(),
            "host": {"machineName": "billing-7d9f", "processName": "Billing.Api"},
        }
        _publish(
            ch, n["invoices_error"], "", _json(envelope),
            {"MT-Reason": "fault",
             "MT-Fault-ExceptionType": "System.InvalidOperationException",
             "MT-Fault-Message": f"Invoice INV-{run}-{i} total does not match its lines",
             "MT-Fault-StackTrace": "   at Billing.InvoiceConsumer.Consume(ConsumeContext`1 "
                                    "context) in /src/Billing/InvoiceConsumer.cs:line 42\n"
                                    "   at MassTransit.DependencyInjection.ScopeConsumeFilter"
                                    "`2.Send(ConsumeContext`1 context)",
             "MT-Fault-Timestamp": datetime.now(UTC).isoformat(),
             "MT-Fault-RetryCount": 5,
             "MT-Fault-InputAddress": f"rabbitmq://localhost/{n['invoices']}",
             "MT-Fault-MessageType": "urn:message:Billing.Contracts:SubmitInvoice",
             "MT-Fault-ConsumerType": "Billing.InvoiceConsumer",
             "MT-Host-MachineName": "billing-7d9f"},
            content_type="application/vnd.masstransit+json", message_id=message_id,
        )  # fmt: skip
    return {"MassTransit fault": 2}


def _notifications(ch, n: dict, run: str) -> dict:
    """NServiceBus moved a failed message to its error queue, with ExceptionInfo headers."""
    message_id = str(uuid.uuid4())
    failed_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S:%f Z")
    _publish(
        ch, "", n["notifications_error"],
        _json({"UserId": f"usr-{run}", "Template": "welcome", "Email": "ana@example.com"}),
        {"NServiceBus.MessageId": message_id,
         "NServiceBus.FailedQ": n["notifications"],
         "NServiceBus.ProcessingEndpoint": "Notifications",
         "NServiceBus.TimeOfFailure": failed_at,
         "NServiceBus.EnclosedMessageTypes": "Notifications.Messages.SendWelcomeEmail, "
                                             "Notifications.Messages, Version=1.0.0.0",
         "NServiceBus.ExceptionInfo.ExceptionType": "System.Net.Mail.SmtpException",
         "NServiceBus.ExceptionInfo.Message": "Mailbox unavailable. The server response "
                                              "was: 5.7.1 Relaying denied",
         "NServiceBus.ExceptionInfo.Source": "System.Net.Mail",
         "NServiceBus.ExceptionInfo.StackTrace": "System.Net.Mail.SmtpException: Mailbox "
                                                 "unavailable.\n   at Notifications."
                                                 "WelcomeEmailHandler.Handle(...)",
         "NServiceBus.Retries": 3,
         "NServiceBus.Timeout": False},
        content_type="application/json", message_id=message_id,
    )  # fmt: skip
    return {"NServiceBus failure": 1}


def run(url: str, prefix: str = "demo", timeout: float = 20.0) -> list[tuple[str, dict]]:
    """Declare the topology and dead-letter one set of messages; [(parking queue, what)]."""
    n = names(prefix)
    run_id = uuid.uuid4().hex[:6]
    deadline = time.monotonic() + timeout
    conn = amqp.connect(url, f"dlq-demo {prefix}")
    try:
        ch = conn.channel()
        try:
            declare(ch, n)
        except amqp.ChannelErrors as e:
            raise DemoError(
                f"the broker refused a declaration ({e}); an existing {prefix}.* queue has "
                f"other arguments: delete it, or run with --delete first"
            ) from None
        ch.confirm_delivery()
        return [
            (n["orders_dlq"], _orders(ch, n, run_id)),
            (n["payments_parking"], _payments(ch, n, run_id, deadline)),
            (n["shipping_dead"], _shipping(ch, n, run_id, deadline)),
            (n["invoices_error"], _invoices(ch, n, run_id)),
            (n["notifications_error"], _notifications(ch, n, run_id)),
        ]
    finally:
        if conn.is_open:
            conn.close()


def delete(url: str, prefix: str = "demo") -> list[str]:
    """Remove the demo topology (its queues, with what they hold, and its exchanges)."""
    conn = amqp.connect(url, f"dlq-demo {prefix}")
    try:
        ch = conn.channel()
        for queue in queues_of(prefix):
            ch.queue_delete(queue)
        for exchange in exchanges_of(prefix):
            ch.exchange_delete(exchange)
    finally:
        if conn.is_open:
            conn.close()
    return queues_of(prefix) + exchanges_of(prefix)
