"""MassTransit's envelope read from untrusted bodies: the type, or nothing, and quickly."""

import json
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from dlq.messages import masstransit
from dlq.messages.masstransit import CONTENT_TYPE, ENVELOPE_BYTES, message_type

URN = "urn:message:Sales.Contracts:SubmitOrder"


def test_a_character_cut_by_the_bound_is_not_taken_for_a_body_that_is_not_utf8():
    for pad in range(4):  # one of these puts the bound inside a two-byte "é"
        envelope = {"messageId": "x" * pad, "messageType": [URN], "message": "é" * ENVELOPE_BYTES}
        assert (
            message_type(json.dumps(envelope, ensure_ascii=False).encode(), CONTENT_TYPE, None)
            == URN
        )


def test_the_content_encoding_decides_whether_the_body_is_text():
    body = json.dumps({"messageType": [URN]}).encode()
    for encoding in (None, "", "UTF-8", "utf8", "identity"):
        assert message_type(body, CONTENT_TYPE, encoding) == URN, encoding
    for encoding in ("gzip", "deflate", "br", {"base64": "/w=="}):
        assert message_type(body, CONTENT_TYPE, encoding) == "", encoding


def test_only_the_envelopes_own_field_is_read():
    nested = {"message": {"messageType": [URN]}, "headers": {"messageType": [URN]}}
    assert message_type(json.dumps(nested).encode(), CONTENT_TYPE, None) == ""
    spaced = b' \r\n{ "messageId" : "1" ,\n\t"messageType" :\n["' + URN.encode() + b'"] }'
    assert message_type(spaced, CONTENT_TYPE, None) == URN


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.text(max_size=12), inner, max_size=4)
            ),
            max_leaves=30,
        ).map(lambda value: json.dumps(value).encode()),
    ),
    st.integers(0, 40),
)
def test_any_body_gives_a_type_or_nothing_and_never_an_error(body, cut):
    for sample in (body, body[:cut], b'{"messageType": ' + body, b"[" * 50_000 + body):
        started = time.perf_counter()
        found = message_type(sample, CONTENT_TYPE, None)
        assert isinstance(found, str)
        assert time.perf_counter() - started < 0.5  # the bound: never the whole body


def test_a_huge_body_is_read_only_up_to_the_bound(monkeypatch):
    """A multi-megabyte message after messageType is never decoded."""
    decoded = []
    real = masstransit._decode
    monkeypatch.setattr(
        masstransit, "_decode", lambda text, at: decoded.append(len(text)) or real(text, at)
    )
    body = json.dumps({"messageType": [URN], "message": "x" * 8_000_000}).encode()
    assert message_type(body, CONTENT_TYPE, None) == URN
    assert decoded and max(decoded) <= ENVELOPE_BYTES


def test_the_media_type_matches_as_media_types_do():
    """Case-insensitive, with parameters: some clients send the charset in the content type."""
    body = json.dumps({"messageType": [URN]}).encode()
    same = [
        "application/vnd.masstransit+json; charset=utf-8",
        "Application/Vnd.MassTransit+JSON",
        "application/vnd.masstransit+json ;v=1",
    ]
    for media_type in same:
        assert message_type(body, media_type, None) == URN, media_type
    for other in ("application/vnd.masstransit+jsonx", "application/json", "", None, b"x"):
        assert message_type(body, other, None) == "", other
