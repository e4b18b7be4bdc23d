"""build_row stores exactly what it stored before it was made faster (tests/ingestcases.py)."""

import json
from pathlib import Path

from tests.ingestcases import GOLDEN, rows

ROOT = Path(__file__).resolve().parent.parent


def test_every_stored_value_and_fingerprint_is_unchanged():
    expected = json.loads((ROOT / GOLDEN).read_text())
    actual = json.loads(json.dumps(rows()))  # the same JSON round trip as the golden file
    assert len(actual) == len(expected)
    for i, (got, want) in enumerate(zip(actual, expected, strict=True)):
        assert got == want, f"delivery {i}"
