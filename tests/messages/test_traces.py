"""The trace id a message's tracing headers name (dlq/messages/traces.py): each format as its
spec writes it, the precedence between them, and hostile values that must give ""."""

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq.messages import traces
from dlq.messages.traces import trace_id
from tests import hostile

W3C_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
B3_ID = "80f198ee56343ba864fe8b2a57d3eff7"
SENTRY_ID = "771a43a4192642f0b136d5159a501700"
SPAN = "00f067aa0ba902b7"


def _str(value) -> dict:
    return {"type": "longstr", "value": value}


def typed(**headers) -> dict:
    return {name.replace("_", "-"): _str(value) for name, value in headers.items()}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (f"00-{W3C_ID}-{SPAN}-01", W3C_ID),
        (f"00-{W3C_ID}-{SPAN}-00", W3C_ID),  # not sampled: still the trace
        (f" 00-{W3C_ID}-{SPAN}-01\t", W3C_ID),  # optional white space around a header value
        (f"cc-{W3C_ID}-{SPAN}-01-what-the-future-adds", W3C_ID),  # a later version may add
        (f"00-{W3C_ID}-{SPAN}-01-more", ""),  # version 00 has nothing after the flags
        (f"ff-{W3C_ID}-{SPAN}-01", ""),  # version ff is invalid
        (f"00-{'0' * 32}-{SPAN}-01", ""),  # all-zero trace id
        (f"00-{W3C_ID}-{'0' * 16}-01", ""),  # all-zero parent id
        (f"00-{W3C_ID.upper()}-{SPAN}-01", ""),  # upper case is not lower-hex
        (f"00-{W3C_ID}-{SPAN.upper()}-01", ""),
        (f"0A-{W3C_ID}-{SPAN}-01", ""),
        (f"00-{W3C_ID[:-1]}-{SPAN}-01", ""),  # 31 digits
        (f"00-{W3C_ID}0-{SPAN}-01", ""),  # 33 digits
        (f"00-{W3C_ID}-{SPAN}-1", ""),
        (f"00_{W3C_ID}_{SPAN}_01", ""),
        (f"00-{W3C_ID[:-1]}g-{SPAN}-01", ""),
        ("", ""),
    ],
)
def test_w3c_traceparent(value, expected):
    assert traces.w3c(value.strip(" \t")) == expected
    assert trace_id(typed(traceparent=value)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (f"{B3_ID}-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90", B3_ID),
        (f"{B3_ID}-e457b5a2e4d86bd1-d", B3_ID),
        (f"{B3_ID}-e457b5a2e4d86bd1", B3_ID),
        ("a3ce929d0e0e4736-e457b5a2e4d86bd1-0", "a3ce929d0e0e4736"),  # 64-bit
        ("0", ""),  # a sampling decision alone names no trace
        ("d", ""),
        (f"{B3_ID}-e457b5a2e4d86bd1-2", ""),  # sampled is 0, 1 or d
        (f"{B3_ID}-e457b5a2e4d86bd1-1-05e3", ""),
        (f"{'0' * 32}-e457b5a2e4d86bd1-1", ""),
        (f"{B3_ID[:24]}-e457b5a2e4d86bd1-1", ""),  # 24 digits: neither 16 nor 32
        (f"{B3_ID.upper()}-e457b5a2e4d86bd1-1", ""),  # B3 ids are lower-hex
    ],
)
def test_b3_single_header(value, expected):
    assert trace_id(typed(b3=value)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (B3_ID, B3_ID),
        ("a3ce929d0e0e4736", "a3ce929d0e0e4736"),
        ("0" * 16, ""),
        (B3_ID[:20], ""),
        (B3_ID + "0", ""),
        ("A3CE929D0E0E4736", ""),
        (f"{B3_ID}-x", ""),
    ],
)
def test_b3_trace_id_header(value, expected):
    assert trace_id({"X-B3-TraceId": _str(value)}) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (f"{W3C_ID}:{SPAN}:0:1", W3C_ID),
        ("a3ce929d0e0e4736:e457b5a2e4d86bd1:0:1", "a3ce929d0e0e4736"),
        # Leading zeros left out, any case: padded and lower-cased as Jaeger prints it.
        ("ABC:1:0:1", "0000000000000abc"),
        ("1a3ce929d0e0e4736:1:0:1", "0000000000000001a3ce929d0e0e4736"),  # high bits: 32
        ("00000000000000000000000000000abc:1:0:1", "0000000000000abc"),
        (f"{W3C_ID}%3A{SPAN}%3A0%3A1", W3C_ID),  # URL-encoded, as clients may send it
        ("0:1:0:1", ""),  # zero trace id
        (f"{W3C_ID}:0:0:1", ""),  # zero span id
        (f"{W3C_ID}0:1:0:1", ""),  # 33 digits
        (f"{W3C_ID}:{SPAN}:0", ""),  # three parts
        (f"{W3C_ID}:{SPAN}:0:1:2", ""),
        ("xyz:1:0:1", ""),
    ],
)
def test_jaeger_uber_trace_id(value, expected):
    assert trace_id(typed(uber_trace_id=value)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (f"{SENTRY_ID}-b4df6ef7e4e4a6a8-1", SENTRY_ID),
        (f"{SENTRY_ID}-b4df6ef7e4e4a6a8-0", SENTRY_ID),
        (f"{SENTRY_ID}-b4df6ef7e4e4a6a8", SENTRY_ID),
        (f"{SENTRY_ID}-b4df6ef7e4e4a6a8-2", ""),
        (f"{SENTRY_ID}", ""),
        (f"{'0' * 32}-b4df6ef7e4e4a6a8-1", ""),
        (f"{SENTRY_ID.upper()}-b4df6ef7e4e4a6a8-1", ""),
        (f"{SENTRY_ID[:16]}-b4df6ef7e4e4a6a8-1", ""),  # Sentry's trace ids are 128-bit
    ],
)
def test_sentry_trace(value, expected):
    assert trace_id(typed(sentry_trace=value)) == expected


def test_header_names_match_in_any_case():
    for name in ("traceparent", "Traceparent", "TRACEPARENT", "TraceParent"):
        assert trace_id({name: _str(f"00-{W3C_ID}-{SPAN}-01")}) == W3C_ID
    for name in ("x-b3-traceid", "X-B3-TRACEID"):
        assert trace_id({name: _str(B3_ID)}) == B3_ID


def test_precedence_w3c_then_b3_then_jaeger_then_sentry_whatever_the_table_order():
    jaeger = "abc:1:0:1"
    headers = {
        "sentry-trace": _str(f"{SENTRY_ID}-b4df6ef7e4e4a6a8-1"),
        "uber-trace-id": _str(jaeger),
        "X-B3-TraceId": _str("a3ce929d0e0e4736"),
        "b3": _str(f"{B3_ID}-e457b5a2e4d86bd1-1"),
        "traceparent": _str(f"00-{W3C_ID}-{SPAN}-01"),
    }
    assert trace_id(headers) == W3C_ID
    del headers["traceparent"]
    assert trace_id(headers) == B3_ID
    del headers["b3"]
    assert trace_id(headers) == "a3ce929d0e0e4736"
    del headers["X-B3-TraceId"]
    assert trace_id(headers) == "0000000000000abc"
    del headers["uber-trace-id"]
    assert trace_id(headers) == SENTRY_ID


def test_a_malformed_header_is_passed_over_for_the_next_format():
    headers = {
        "traceparent": _str(f"00-{'0' * 32}-{SPAN}-01"),
        "b3": _str(f"{B3_ID}-e457b5a2e4d86bd1-1"),
    }
    assert trace_id(headers) == B3_ID


def test_values_of_other_types_give_nothing_and_ascii_bytes_are_read():
    raw = base64.b64encode(f"00-{W3C_ID}-{SPAN}-01".encode()).decode()
    assert trace_id({"traceparent": {"type": "bytes", "base64": raw}}) == W3C_ID
    for value in (
        {"type": "int64", "value": 5},
        {"type": "table", "value": {"traceparent": _str(f"00-{W3C_ID}-{SPAN}-01")}},
        {"type": "array", "value": [_str(f"00-{W3C_ID}-{SPAN}-01")]},
        {"type": "void", "value": None},
        {"type": "longstr", "base64": "/w=="},  # not UTF-8
        _str(f"00-{W3C_ID}-{SPAN}-01" + " " * 600),  # longer than any header
        None,
        "00-" + W3C_ID,
    ):
        assert trace_id({"traceparent": value}) == ""
    assert trace_id({}) == ""


def test_plain_values_are_parsed_by_name():
    assert traces.parse("Traceparent", f"00-{W3C_ID}-{SPAN}-01".encode()) == W3C_ID
    assert traces.parse("b3", 12) == "" and traces.parse(b"b3", B3_ID) == ""
    assert traces.parse("x-other", B3_ID) == ""


# Property tests --------------------------------------------------------------------------

hex_ids = (
    st.sampled_from([16, 32])
    .flatmap(lambda n: st.text("0123456789abcdef", min_size=n, max_size=n))
    .filter(lambda s: s.strip("0"))
)
spans = st.text("0123456789abcdef", min_size=16, max_size=16).filter(lambda s: s.strip("0"))
names = st.sampled_from(list(traces.PARSERS)).flatmap(
    lambda name: st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda upper: "".join(c.upper() if u else c for c, u in zip(name, upper, strict=True))
    )
)


@settings(max_examples=300, deadline=None)
@given(hex_ids.filter(lambda s: len(s) == 32), spans, st.sampled_from(["00", "01", "ff"]))
def test_any_valid_traceparent_is_found(trace, span, flags):
    assert trace_id({"traceparent": _str(f"00-{trace}-{span}-{flags}")}) == trace


@settings(max_examples=300, deadline=None)
@given(hex_ids, spans, st.sampled_from(["", "-0", "-1", "-d"]))
def test_any_valid_b3_is_found(trace, span, sampled):
    assert trace_id({"b3": _str(f"{trace}-{span}{sampled}")}) == trace
    assert trace_id({"X-B3-TraceId": _str(trace)}) == trace


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 2**128 - 1), st.integers(1, 2**64 - 1), st.booleans())
def test_any_valid_jaeger_id_is_found_as_jaeger_prints_it(number, span, upper):
    written = f"{number:x}:{span:x}:0:1"
    found = trace_id({"uber-trace-id": _str(written.upper() if upper else written)})
    assert found == (f"{number:016x}" if number < 2**64 else f"{number:032x}")
    assert int(found, 16) == number


@settings(max_examples=300, deadline=None)
@given(hex_ids.filter(lambda s: len(s) == 32), spans, st.sampled_from(["", "-0", "-1"]))
def test_any_valid_sentry_trace_is_found(trace, span, sampled):
    assert trace_id({"sentry-trace": _str(f"{trace}-{span}{sampled}")}) == trace


@settings(max_examples=1000, deadline=None)
@given(
    st.dictionaries(
        st.one_of(names, st.text(max_size=15)),
        st.one_of(
            hostile.values,
            st.text(max_size=80).map(_str),
            # Near misses: a valid header with one character changed, cut or added.
            st.tuples(
                st.sampled_from(
                    [
                        f"00-{W3C_ID}-{SPAN}-01",
                        f"{B3_ID}-e457b5a2e4d86bd1-1",
                        B3_ID,
                        f"{W3C_ID}:{SPAN}:0:1",
                        f"{SENTRY_ID}-b4df6ef7e4e4a6a8-1",
                    ]
                ),  # fmt: skip
                st.integers(0, 60),
                st.text(max_size=2),
            ).map(lambda t: _str(t[0][: t[1]] + t[2] + t[0][t[1] + 1 :])),
        ),
        max_size=6,
    )
)
def test_hostile_headers_never_raise_and_never_give_an_invalid_id(headers):
    found = trace_id(headers)
    assert found == "" or traces.valid(found)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(names, st.text(max_size=15), st.binary(max_size=5), st.integers()),
       st.one_of(st.text(max_size=120), st.binary(max_size=120), st.integers(), st.none(),
                 st.floats(), st.lists(st.text(max_size=3), max_size=3)))  # fmt: skip
def test_any_plain_name_and_value_never_raise_and_never_give_an_invalid_id(name, value):
    found = traces.parse(name, value)
    assert found == "" or traces.valid(found)


@pytest.mark.parametrize(
    ("value", "ok"),
    [(W3C_ID, True), ("a3ce929d0e0e4736", True), ("0" * 32, False), (W3C_ID.upper(), False),
     (W3C_ID[:20], False), (W3C_ID[:31] + "g", False), ("", False)],
)  # fmt: skip
def test_valid_says_what_is_stored(value, ok):
    assert traces.valid(value) is ok
