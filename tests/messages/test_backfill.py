"""`manage.py dlq_backfill`: messages stored before 0.4.0 get what 0.4.0 derives on arrival."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from dlq.actions import message as message_actions
from dlq.models import Message
from tests.factories import make_message, make_messages

pytestmark = pytest.mark.django_db
SUBMIT_ORDER = "urn:message:Sales.Contracts:SubmitOrder"


def _as_stored_before(m: Message) -> None:
    """What 0.3.0 stored: no type from the AMQP property, so another group."""
    Message.objects.filter(pk=m.pk).update(message_type="", group="0ld0ld0ld0ld0ld0")


def test_it_derives_again_in_batches_and_changes_only_what_differs():
    typed = make_messages(3, type="billing.InvoiceDue")
    plain = make_message()
    expected = {m.pk: (m.message_type, m.group) for m in [*typed, plain]}
    assert typed[0].message_type == "billing.InvoiceDue"
    for m in typed:
        _as_stored_before(m)

    out = StringIO()
    call_command("dlq_backfill", "--batch", "2", stdout=out)

    assert "2 of 4 messages read" in out.getvalue() and "4 of 4 messages read" in out.getvalue()
    assert "done: 3 messages changed" in out.getvalue()
    for m in Message.objects.all():
        assert (m.message_type, m.group) == expected[m.pk]
    out = StringIO()
    call_command("dlq_backfill", stdout=out)  # again: nothing left to do
    assert "done: 0 messages changed" in out.getvalue()


def test_an_edited_message_is_derived_from_what_it_arrived_with():
    m = make_message(type="billing.InvoiceDue")
    message_actions.edit(m.pk, "erin", "rename", properties={**m.properties, "type": "other"})
    _as_stored_before(m)

    call_command("dlq_backfill", stdout=StringIO())

    m.refresh_from_db()
    assert m.message_type == "billing.InvoiceDue"
    assert m.properties["type"] == "other"  # the edit itself stays


def test_a_row_it_cannot_read_is_skipped_and_the_rest_go_on():
    broken, fine = make_messages(2, type="billing.InvoiceDue")
    for m in (broken, fine):
        _as_stored_before(m)
    Message.objects.filter(pk=broken.pk).update(headers_json="not json")

    out = StringIO()
    call_command("dlq_backfill", stdout=out)

    assert "done: 1 messages changed" in out.getvalue()
    fine.refresh_from_db()
    assert fine.message_type == "billing.InvoiceDue"
    assert Message.objects.get(pk=broken.pk).message_type == ""  # kept as stored


def test_symfony_messages_stored_before_0_6_get_what_their_envelope_says():
    body = (Path(__file__).parent.parent / "frameworks/symfony/failed_php_body.bin").read_bytes()
    delay = "delay_async_async_200_retry"
    m = make_message(
        queue="failed", body=body, died_in=delay, reason="expired", exchange="delays",
        routing_key=delay, dlx="failed", delivered_key="async",
    )  # fmt: skip
    Message.objects.filter(pk=m.pk).update(  # what 0.5 derived: the delay queue's expiry
        message_type="", exception_type="", exception_message="", failed_queue=delay,
        death_reason="expired", delivery_count=None, original_exchange="delays",
        original_routing_keys_json=f'["{delay}"]', original_routing_key=delay,
    )  # fmt: skip

    call_command("dlq_backfill", stdout=StringIO())

    m.refresh_from_db()
    assert (m.message_type, m.exception_type) == ("App\\Message\\SubmitInvoice", "RuntimeException")
    assert (m.failed_queue, m.death_reason, m.delivery_count) == ("async", "handler_failed", 2)
    assert (m.original_exchange, m.original_routing_keys) == ("", ["async"])


def test_masstransit_and_nservicebus_types_stored_without_them_are_derived_as_on_arrival():
    """Stored before the envelope and enclosed types were read without failure headers."""
    envelope = {"messageId": "2c00", "messageType": [SUBMIT_ORDER], "message": {"orderId": 42}}
    masstransit = make_message(
        body=json.dumps(envelope).encode(), content_type="application/vnd.masstransit+json"
    )
    enclosed = "Sales.Messages.PlaceOrder, Sales.Messages, Version=1.0.0.0"
    nservicebus = make_message(headers={"NServiceBus.EnclosedMessageTypes": enclosed})
    arrived = {m.pk: (m.message_type, m.group) for m in (masstransit, nservicebus)}
    assert arrived[masstransit.pk][0] == SUBMIT_ORDER
    assert arrived[nservicebus.pk][0] == "Sales.Messages.PlaceOrder"
    for m in (masstransit, nservicebus):
        _as_stored_before(m)

    out = StringIO()
    call_command("dlq_backfill", stdout=out)

    assert "done: 2 messages changed" in out.getvalue()
    for m in Message.objects.all():
        assert (m.message_type, m.group) == arrived[m.pk]  # the group ingest gives, too


def test_messages_stored_before_0_12_get_the_trace_their_headers_name():
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    traced = make_message(headers={"traceparent": f"00-{trace}-00f067aa0ba902b7-01"})
    untraced = make_message()
    assert (traced.trace_id, untraced.trace_id) == (trace, "")
    Message.objects.update(trace_id="")  # what 0.11 stored: no such column

    out = StringIO()
    call_command("dlq_backfill", stdout=out)

    assert "done: 1 messages changed" in out.getvalue()
    assert dict(Message.objects.values_list("pk", "trace_id")) == {
        traced.pk: trace,
        untraced.pk: "",
    }
