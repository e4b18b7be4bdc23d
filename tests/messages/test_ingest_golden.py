"""build_row stores the values it stored before it was made faster (tests/ingestcases.py)."""

import hashlib
import json
from unittest import mock

from dlq.messages import ingest, traces
from dlq.messages.ingest import build_row, legacy_dumps, legacy_fingerprint
from tests import ROOT
from tests.ingestcases import (
    GOLDEN,
    GOLDEN_FINGERPRINTS,
    RECEIVED_AT,
    comparable,
    deliveries,
    fingerprints,
)

JSON_TEXT = ("properties_json", "headers_json", "original_routing_keys_json")


def test_every_stored_value_is_the_one_0_1_0_stored():
    """Values are unchanged; the JSON text holds exactly the same values as 0.1.0's text."""
    expected = json.loads((ROOT / GOLDEN).read_text())
    corpus = deliveries()
    assert len(corpus) == len(expected)
    folded = [build_row(delivery, RECEIVED_AT)["search_text"] for delivery in corpus]
    # 0.9.0 stores the search text folded: what it folds is 0.1.0's text. (No fixture:
    # tests/test_compiled.py calls this test as a plain function.)
    with mock.patch.object(ingest, "fold", lambda text: text):
        rows = [build_row(delivery, RECEIVED_AT) for delivery in corpus]
    for i, (row, want) in enumerate(zip(rows, expected, strict=True)):
        assert folded[i] == row["search_text"].casefold()
        for field in JSON_TEXT:  # 0.1.0 wrote json.dumps's text of the same values
            row[field] = legacy_dumps(json.loads(row[field]))
        del row["fingerprint"]
        del want["fingerprint"]
        got = json.loads(json.dumps(comparable(row)))  # the golden file's JSON round trip
        _as_0_4_0_derives(got, want, json.loads(row["properties_json"]))
        _as_0_5_0_groups(got, want)
        _as_0_12_0_traces(got, want, corpus[i].properties.headers or {})
        assert got == want, f"delivery {i}"


def _as_0_4_0_derives(got: dict, want: dict, properties: dict) -> None:
    """0.4.0 takes the message type from the AMQP `type` property when no framework header
    names one, and a type is part of the group: where 0.1.0 found no type, that is the only
    change allowed."""
    if got["message_type"] == want["message_type"]:
        return
    assert want["message_type"] == ["str", ""]
    assert got["message_type"] == ["str", properties["type"]]
    assert got["group"] != want["group"]
    want["message_type"] = got["message_type"]
    want["group"] = ["str", _group_without_vhost(got)]


def _as_0_5_0_groups(got: dict, want: dict) -> None:
    """0.5.0 puts a vhost other than / into the group's key (a group never spans vhosts)."""
    if got["vhost"] == ["str", "/"]:
        return
    assert want["group"] == ["str", _group_without_vhost(got)]
    assert got["group"] != want["group"]
    want["group"] = got["group"]


def _as_0_12_0_traces(got: dict, want: dict, headers: dict) -> None:
    """0.12.0 adds the trace id, a column 0.1.0 did not have, read from the headers."""
    assert "trace_id" not in want
    assert got.pop("trace_id") == ["str", traces.trace_id(headers)]


def _group_without_vhost(row: dict) -> str:
    parts = [row[name][1] for name in ("failed_queue", "death_reason", "exception_type")]
    key = "\x1f".join([*parts, row["message_type"][1]])
    return hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def test_redeliveries_of_messages_0_1_0_stored_are_recognised():
    """A 0.1.0 drainer's pending batch is matched by the fingerprint it stored."""
    expected = json.loads((ROOT / GOLDEN).read_text())
    for i, (delivery, want) in enumerate(zip(deliveries(), expected, strict=True)):
        assert legacy_fingerprint(delivery) == want["fingerprint"][1], f"delivery {i}"


def test_fingerprints_are_unchanged():
    expected = json.loads((ROOT / GOLDEN_FINGERPRINTS).read_text())
    assert fingerprints() == expected
    assert len(set(expected)) > len(expected) // 2  # distinct messages, distinct prints


def test_the_stored_json_text_is_compact_utf8_and_escaped_ascii_where_utf8_cannot_be():
    texts = [build_row(d, RECEIVED_AT)["headers_json"] for d in deliveries()]
    assert any('"value":"²"' in t for t in texts)  # compact, UTF-8 as it is
    surrogate_keys = [t for t in texts if "\\udc" in t]  # a header name that was not UTF-8
    assert surrogate_keys and all(t.isascii() for t in surrogate_keys)
