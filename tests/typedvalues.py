"""Every AMQP field type as the console's typed JSON, once: the ingest corpus
(tests/ingestcases.py) and the header round trip through the broker
(tests/broker/test_header_roundtrip.py) both use these cases."""

import base64
import struct


def longstr(text: str) -> dict:
    return {"type": "longstr", "value": text}


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


FLOAT32 = struct.unpack(">f", struct.pack(">f", 0.1))[0]  # 0.10000000149011612

TYPED = {
    "bool": {"type": "bool", "value": True},
    "bool-false": {"type": "bool", "value": False},
    "int8": {"type": "int8", "value": -128},
    "uint8": {"type": "uint8", "value": 255},
    "int16": {"type": "int16", "value": -32768},
    "uint16": {"type": "uint16", "value": 65535},
    "int32": {"type": "int32", "value": -(2**31)},
    "uint32": {"type": "uint32", "value": 2**32 - 1},
    "int64": {"type": "int64", "value": 2**63 - 1},
    "int64-min": {"type": "int64", "value": -(2**63)},
    "float": {"type": "float", "value": 1.75},
    "float32": {"type": "float", "value": FLOAT32},
    "double": {"type": "double", "value": 0.1},
    "double-huge": {"type": "double", "value": -1.5e308},
    "double-tiny": {"type": "double", "value": 5e-324},
    "decimal": {"type": "decimal", "value": "12.50"},
    "decimal-negative": {"type": "decimal", "value": "-0.001"},
    "longstr": longstr("héllo ✓ 日本 \U0001f600"),
    "longstr-bmp": longstr("héllo ✓ 日本"),
    "longstr-empty": longstr(""),
    "longstr-nul": longstr("before\u0000after"),
    "longstr-not-utf8": {"type": "longstr", "base64": b64(b"\xff\xfe\x00latin-1 \xe9")},
    "bytes": {"type": "bytes", "base64": b64(b"\x00\x01\x02\xff")},
    "bytes-empty": {"type": "bytes", "base64": ""},
    "timestamp": {"type": "timestamp", "value": 1_700_000_000},
    "timestamp-huge": {"type": "timestamp", "value": 2**63},
    "void": {"type": "void", "value": None},
    "array": {
        "type": "array",
        "value": [longstr("a"), {"type": "int8", "value": 1}, {"type": "array", "value": []}],
    },
    "array-nested": {
        "type": "array",
        "value": [
            longstr("a"),
            {"type": "int8", "value": 1},
            {"type": "void", "value": None},
            {
                "type": "array",
                "value": [{"type": "float", "value": 1.75}, {"type": "array", "value": []}],
            },
            {"type": "table", "value": {"k": {"type": "decimal", "value": "1.5"}}},
        ],
    },
    "table": {
        "type": "table",
        "value": {"inner": {"type": "table", "value": {"nul\u0000key": longstr("x\u0000y")}}},
    },
    "table-nested": {
        "type": "table",
        "value": {
            "nested": {
                "type": "table",
                "value": {
                    "deeper": {"type": "array", "value": [{"type": "timestamp", "value": 0}]},
                    "nul\u0000key": longstr("\u0000"),
                },
            },
            "key-\udcff-not-utf8": {"type": "bytes", "base64": b64(b"\xff")},
            "empty": {"type": "table", "value": {}},
        },
    },
    "ключ ✓": longstr("unicode key"),
    "bad-key-\udcff": longstr("a key that is not UTF-8"),
    "top-\udce9-not-utf8": longstr("a key that is latin-1"),
}
