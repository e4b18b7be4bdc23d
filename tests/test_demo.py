import json
import time
from io import StringIO

import pytest
from django.core.management import call_command

from dlq.management import demo
from dlq.models import Message
from tests.conftest import drain_once

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def prefix(rabbit, unique):
    yield unique
    demo.delete(rabbit.url, unique)


def parking_patterns(prefix: str) -> list[str]:
    # Only this demo's parking queues: never the default globs, never its work queues.
    return [f"{prefix}.*.dlq", f"{prefix}.*.dead", f"{prefix}.*.parking", f"{prefix}.*_error"]


def test_demo_dead_letters_a_varied_set_that_the_drainer_stores(prefix):
    out = StringIO()
    call_command("dlq_demo", prefix=prefix, stdout=out)
    assert f"{prefix}.orders.dlq" in out.getvalue()
    assert "dead-lettered 15 messages" in out.getvalue()

    drain_once(parking_patterns(prefix))

    stored = Message.objects.filter(queue__startswith=f"{prefix}.")
    assert stored.count() == 15
    assert {m.queue for m in stored} == {
        f"{prefix}.orders.dlq",
        f"{prefix}.payments.parking",
        f"{prefix}.shipping.dead",
        f"{prefix}.invoices_error",
        f"{prefix}.notifications_error",
    }
    reasons = {m.death_reason for m in stored}
    assert {"rejected", "expired", "delivery_limit"} <= reasons
    types = {m.exception_type for m in stored}
    assert "System.InvalidOperationException" in types  # MassTransit
    assert "System.Net.Mail.SmtpException" in types  # NServiceBus
    assert any(t.startswith("org.springframework.amqp") for t in types)  # Spring AMQP

    xss = stored.get(content_type="text/html")
    assert bytes(xss.body) == b"<script>alert(1)</script>"
    assert xss.headers["customer-note"] == {"type": "longstr", "value": demo.XSS}

    priced = stored.get(correlation_id__startswith="checkout-")
    assert priced.headers["unit-price"] == {"type": "double", "value": 19.99}
    assert priced.headers["weight-kg"] == {"type": "float", "value": 1.75}

    gz = stored.get(content_encoding="gzip")
    assert bytes(gz.body)[:2] == b"\x1f\x8b"

    cc = stored.filter(original_routing_keys_json__contains="order.audit").get()
    assert cc.original_routing_keys == ["order.created", "order.audit", "order.billing"]

    parked = stored.filter(queue=f"{prefix}.payments.parking")
    assert all(m.delivery_count == demo.PAYMENT_RETRIES for m in parked)
    assert all(m.failed_queue in (f"{prefix}.payments", f"{prefix}.payments.retry")
               for m in parked)  # fmt: skip
    shipped = stored.filter(queue=f"{prefix}.shipping.dead")
    assert {m.failed_queue for m in shipped} == {f"{prefix}.shipping"}
    invoice = stored.filter(queue=f"{prefix}.invoices_error").first()
    assert json.loads(bytes(invoice.body))["messageType"]


def test_demo_can_run_again_and_adds_another_set(prefix):
    for _ in range(2):
        call_command("dlq_demo", prefix=prefix, stdout=StringIO())

    drain_once(parking_patterns(prefix))

    assert Message.objects.filter(queue__startswith=f"{prefix}.").count() == 30


def test_demo_says_what_dlq_queues_is_and_what_it_matched(prefix, settings):
    settings.DLQ_QUEUES = parking_patterns(prefix)
    out = StringIO()
    call_command("dlq_demo", prefix=prefix, stdout=out)
    text = out.getvalue()

    assert "it takes every message OUT of them" in text
    assert "Never point it at a work queue or a retry queue" in text
    [line] = [line for line in text.splitlines() if "drains in vhost /: " in line]
    assert line.split(": ", 1)[1].split(", ") == [
        f"{prefix}.invoices_error",
        f"{prefix}.notifications_error",
        f"{prefix}.orders.dlq",
        f"{prefix}.payments.parking",
        f"{prefix}.shipping.dead",
    ]  # fmt: skip  (never the work queues: {prefix}.orders, {prefix}.payments.retry, ...)


def test_the_demo_leaves_a_sent_alert_with_buttons_once_its_messages_are_stored(prefix):
    from dlq.management.commands.dlq_up import Command
    from dlq.models import AlertAttempt
    from tests.factories import client_for, make_user

    up = Command(stdout=StringIO(), stderr=StringIO())
    up.demo_alert_by, up.demo_seen = time.monotonic() + 60, 0
    up._leave_demo_alert()  # nothing stored yet: it waits
    assert not AlertAttempt.objects.exists() and up.demo_alert_by is not None
    call_command("dlq_demo", prefix=prefix, stdout=StringIO())
    drain_once(parking_patterns(prefix))

    up._leave_demo_alert()  # the count grew since the last turn: it waits one more
    assert not AlertAttempt.objects.exists()
    up._leave_demo_alert()

    assert up.demo_alert_by is None
    [alert] = AlertAttempt.objects.all()
    assert alert.status == "sent" and alert.channel_name == "demo"
    assert not alert.channel.enabled  # nothing is ever sent to it
    page = client_for(make_user("operator")).get("/alerts/sent/").content.decode()
    assert page.count(">Acknowledge</button>") == len(alert.digest.groups) == 4
    assert page.count('<span class="badge badge-open">open</span>') == 4
