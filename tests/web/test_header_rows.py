"""The edit form's header rows (dlq/web/forms/header_rows.py): what a row shows reads back to
the same wire bytes, a row left as it was keeps its stored value, and what a row cannot say is
left to the typed JSON."""

import base64

import pytest

from dlq.actions.errors import ActionError
from dlq.broker.codec import encode_table
from dlq.web.forms import header_rows
from dlq.web.forms.header_rows import Row, read_rows, row_text, rows_of

ROWABLE = {
    "text": {"type": "longstr", "value": "héllo ✓ 日本 | pipe"},
    "empty": {"type": "longstr", "value": ""},
    "int8": {"type": "int8", "value": -128},
    "uint8": {"type": "uint8", "value": 255},
    "int16": {"type": "int16", "value": -32768},
    "uint16": {"type": "uint16", "value": 65535},
    "int32": {"type": "int32", "value": 7},
    "uint32": {"type": "uint32", "value": 2**32 - 1},
    "int64": {"type": "int64", "value": 2**63 - 1},
    "float": {"type": "float", "value": 0.10000000149011612},
    "double": {"type": "double", "value": -1.5e308},
    "double-whole": {"type": "double", "value": 2.0},
    "decimal": {"type": "decimal", "value": "-0.001"},
    "timestamp": {"type": "timestamp", "value": 1_700_000_000},
    "bytes": {"type": "bytes", "base64": base64.b64encode(b"\x00\x01\xfe\xff").decode()},
    "bool": {"type": "bool", "value": True},
    "void": {"type": "void", "value": None},
}
JSON_ONLY = {
    "nested": {"type": "table", "value": {"a": {"type": "int8", "value": 1}}},
    "list": {"type": "array", "value": []},
    "not-utf8": {"type": "longstr", "base64": base64.b64encode(b"caf\xe9").decode()},
    "nul": {"type": "longstr", "value": "a\x00b"},
    "newline": {"type": "longstr", "value": "a\nb"},
    "bidi": {"type": "longstr", "value": "total: \u202e0001"},
    "bidi\u202ename": {"type": "longstr", "value": "x"},
    "surrogate\udcffname": {"type": "longstr", "value": "x"},
    "long": {"type": "longstr", "value": "x" * (header_rows.ROW_TEXT_LIMIT + 1)},
}


@pytest.mark.parametrize("name", ROWABLE)
def test_a_row_typed_again_as_shown_is_the_same_wire_bytes(name):
    typed = ROWABLE[name]
    retyped = read_rows([Row("", name, typed["type"], row_text(typed))], {})
    assert encode_table(retyped) == encode_table({name: typed})


def test_rows_left_as_they_were_give_back_the_stored_headers_exactly():
    stored = {**ROWABLE, **JSON_ONLY}
    rows, fixed = rows_of(stored)
    assert [row.name for row in rows] == list(ROWABLE)
    assert fixed == list(JSON_ONLY)
    headers = read_rows(rows, stored)
    assert list(headers) == list(stored)
    assert all(headers[name] is stored[name] for name in stored)  # not re-read: kept


def test_a_timestamp_row_reads_a_utc_time_or_seconds():
    assert row_text(ROWABLE["timestamp"]) == "2023-11-14T22:13:20Z"
    for text in ("2023-11-14T22:13:20Z", "2023-11-14T23:13:20+01:00", "1700000000"):
        assert read_rows([Row("", "t", "timestamp", text)], {}) == {"t": ROWABLE["timestamp"]}


def test_renamed_removed_and_new_rows_keep_the_stored_order():
    stored = {"a": ROWABLE["text"], "b": ROWABLE["int32"], "c": JSON_ONLY["nested"]}
    rows = [Row("a", "a2", "longstr", ROWABLE["text"]["value"]), Row("b", "b", "int32", "7", True),
            Row("", "d", "bool", "false")]  # fmt: skip
    assert read_rows(rows, stored) == {"a2": ROWABLE["text"], "c": JSON_ONLY["nested"],
                                       "d": {"type": "bool", "value": False}}  # fmt: skip


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (Row("", "", "longstr", "no name"), "a header needs a name"),
        (Row("", "c", "longstr", "x"), "is given twice"),  # c is kept, edited only as JSON
        (Row("", "n", "double", "Infinity"), "not finite"),
        (Row("", "n", "uint8", "-1"), "outside the uint8 range"),
        (Row("", "n", "decimal", "1e99"), "does not fit an AMQP decimal"),
        (Row("", "n", "void", "x"), "leave it empty"),
        (Row("", "n", "table", "{}"), "type must be one of"),
        (Row("gone", "gone", "longstr", "x"), "changed since the page was loaded"),
    ],
)
def test_a_bad_row_is_named_with_its_problem(row, problem):
    stored = {"c": JSON_ONLY["nested"]}
    with pytest.raises(ActionError) as refused:
        read_rows([row], stored)
    assert problem in str(refused.value)
