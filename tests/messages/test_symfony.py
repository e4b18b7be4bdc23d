"""Symfony Messenger's envelopes as its two serializers send them (recorded from the real
application in tests/frameworks/symfony/), and the PHP serialization reader against hostile
bodies: it refuses, it never crashes the drainer, it never does unbounded work."""

import json
from pathlib import Path

import pytest

from dlq.broker import amqp, codec
from dlq.messages import deaths, phpserial, symfony
from dlq.messages.ingest import Delivery, build_row

RECORDED = Path(__file__).parent.parent / "frameworks" / "symfony"
PHP_BODY = (RECORDED / "failed_php_body.bin").read_bytes()
JSON_MESSAGE = json.loads((RECORDED / "failed_json_message.json").read_text())
INVOICE = "App\\Message\\SubmitInvoice"


def test_a_php_serialized_envelope_is_read_without_unserializing_it():
    envelope = symfony.from_body(PHP_BODY)
    assert envelope.serializer == "php"
    assert envelope.message_type == INVOICE
    assert envelope.message == [("invoiceId", "INV-0001"), ("amount", "100")]
    assert (envelope.exception_type, envelope.exception_code) == ("RuntimeException", 0)
    assert envelope.exception_message == "ledger unavailable for INV-0001"
    assert [r["count"] for r in envelope.retries] == [1, 2, 0]
    assert envelope.retries[0]["at"].startswith("20")  # a DateTimeImmutable, as its text
    assert envelope.delays_ms == [200, 400, 0]
    assert (envelope.failed_transport, envelope.retry_count) == ("async", 2)


def test_the_json_serializer_stamps_say_the_same():
    envelope = symfony.from_headers(JSON_MESSAGE["string_headers"])
    assert envelope.serializer == "json"
    assert envelope.message_type == INVOICE
    # Symfony 5.4 writes a date into RedeliveryStamp's exceptionMessage: not the exception.
    assert envelope.exception_message == "ledger unavailable for INV-0001"
    assert (envelope.failed_transport, envelope.retry_count) == ("async", 2)
    assert envelope.delays_ms == [200, 400, 0]


@pytest.mark.parametrize("serializer", ["json", "php"])
def test_the_drainer_derives_where_the_handler_failed(serializer):
    """x-death holds only the delay queues' expiries; the routing key names the queue."""
    entries = [
        {"count": 1, "exchange": "delays", "queue": f"delay_async_async_{ms}_retry",
         "reason": "expired", "routing-keys": [f"delay_async_async_{ms}_retry"],
         "time": {"type": "timestamp", "value": 1795564342}}
        for ms in (400, 200)
    ]  # fmt: skip
    headers = codec.typed_table(
        {"x-death": entries, "x-first-death-queue": "delay_async_async_200_retry",
         "x-first-death-reason": "expired", "x-first-death-exchange": "delays"}
    )  # fmt: skip
    body = PHP_BODY
    if serializer == "json":
        headers.update(codec.typed_table(JSON_MESSAGE["string_headers"]))
        body = JSON_MESSAGE["body"].encode()
    props = amqp.make_properties({"delivery_mode": 2}, headers)
    row = build_row(Delivery("failed", "/", "failed", "async", False, props, body))
    assert row["message_type"] == INVOICE
    assert (row["exception_type"], row["failed_queue"]) == ("RuntimeException", "async")
    assert (row["death_reason"], row["delivery_count"]) == ("handler_failed", 2)
    assert (row["original_exchange"], row["original_routing_key"]) == ("", "async")
    assert row["death_count"] == 2  # the delay queues' deaths are still counted


@pytest.mark.parametrize(
    "body",
    [
        PHP_BODY[:-7],  # truncated
        PHP_BODY + b"x",  # trailing bytes
        PHP_BODY.replace(b"s:16:", b"s:99999999:", 1),  # a length past the end
        PHP_BODY.replace(b"a:4:", b"a:-1:", 1),
        PHP_BODY.replace(b"a:4:", b"a:99999999:", 1),  # too many elements
        PHP_BODY.replace(b"i:200;", b"i:2" + b"0" * 40 + b";", 1),  # a huge integer
        PHP_BODY.replace(b"i:200;", b"r:1;", 1),  # a reference
        PHP_BODY.replace(b"i:200;", b'C:3:\\"Foo\\":1:{x}', 1),  # custom serialization
        b'O:36:\\"Symfony\\\\Component\\\\Messenger\\\\Envelope\\":1:{' + b"a:1:{i:0;" * 500,
        b'O:36:\\"Symfony\\\\Component\\\\Messenger\\\\Envelope\\"' + b"\xff" * 100,
    ],
    ids=[
        "truncated",
        "trailing",
        "length",
        "negative count",
        "count",
        "integer",
        "reference",
        "custom",
        "deep",
        "garbage",
    ],  # fmt: skip
)
def test_a_hostile_php_body_is_refused_and_the_message_is_still_stored(body):
    assert symfony.from_body(body) is None
    props = amqp.make_properties({"delivery_mode": 2}, {})
    row = build_row(Delivery("failed", "/", "failed", "async", False, props, body))
    assert row["body"] == body
    assert (row["message_type"], row["exception_type"], row["death_reason"]) == ("", "", "")


def test_the_reader_refuses_what_it_does_not_know():
    assert phpserial.loads(b'a:2:{i:0;b:1;s:1:"k";d:0.5;}') == {0: True, "k": 0.5}
    assert phpserial.loads(b"N;") is None
    for bad in (b"b:2;", b"i:;", b"i:1", b"x:1;", b's:3:"ab";', b"a:1:{a:0:{}i:1;}", b"d:x;"):
        with pytest.raises(phpserial.Refused):
            phpserial.loads(bad)
    with pytest.raises(phpserial.Refused):
        phpserial.loads(b"N;" * (phpserial.MAX_INPUT // 2 + 1))


def test_protected_and_private_property_names_lose_their_visibility():
    value = phpserial.loads(b'O:3:"Foo":2:{s:6:"\x00*\x00bar";i:1;s:8:"\x00Foo\x00baz";i:2;}')
    assert (value.class_name, value.properties) == ("Foo", {"bar": 1, "baz": 2})


def test_other_bodies_are_not_read_at_all():
    assert symfony.from_body(b'{"invoiceId": "INV-1"}') is None
    assert symfony.from_body(b'O:8:"stdClass":0:{}') is None
    assert deaths.read({}, body=b'O:8:"stdClass":0:{}').message_type == ""


def test_symfony_before_5_2_kept_the_error_in_its_redelivery_stamp():
    """No ErrorDetailsStamp before 5.2; 5.4 writes a date where 4.4 wrote the error."""
    old = symfony.from_headers({symfony.STAMP_HEADER + symfony.REDELIVERY: json.dumps([
        {"retryCount": 3, "exceptionMessage": "ledger down",
         "flattenException": {"class": "RuntimeException", "traceAsString": "#0 foo"}},
    ])})  # fmt: skip
    assert (old.exception_type, old.exception_message) == ("RuntimeException", "ledger down")
    assert old.exception_trace == "#0 foo"
    dated = symfony.from_headers({symfony.STAMP_HEADER + symfony.REDELIVERY: json.dumps([
        {"retryCount": True, "exceptionMessage": "2026-11-24T23:52:21+00:00"},
    ])})  # fmt: skip
    assert (dated.exception_message, dated.retries) == ("", [])  # a boolean is no count


def test_a_property_named_items_is_shown_like_any_other():
    body = PHP_BODY.replace(b's:9:\\"invoiceId\\"', b's:5:\\"items\\"', 1)
    envelope = symfony.from_body(body)
    assert envelope.message == [("items", "INV-0001"), ("amount", "100")]


def test_a_failure_transport_that_dead_letters_with_another_key_keeps_the_failed_queue():
    """The failure queue rejects into a parking queue through a DLX that rewrites the key:
    the failure queue's x-death entry keeps the key Symfony published with."""
    rejected = {
        "count": 1,
        "exchange": "failed",
        "queue": "failed",
        "reason": "rejected",
        "routing-keys": ["async"],
        "time": {"type": "timestamp", "value": 1795564350},
    }
    expired = {"count": 1, "exchange": "delays", "queue": "delay_async_async_200_retry",
               "reason": "expired", "routing-keys": ["delay_async_async_200_retry"],
               "time": {"type": "timestamp", "value": 1795564342}}  # fmt: skip
    headers = codec.typed_table({"x-death": [rejected, expired]})
    props = amqp.make_properties({"delivery_mode": 2}, headers)
    row = build_row(Delivery("parked", "/", "parking-x", "parked", False, props, PHP_BODY))
    assert (row["failed_queue"], row["death_reason"]) == ("async", "handler_failed")
    assert (row["original_exchange"], row["original_routing_key"]) == ("", "async")
