"""ingest's pure helpers on hostile input."""

import tracemalloc
import zlib

from dlq.messages.ingest import SEARCH_BODY_BYTES, body_text
from dlq.text import clean


def _gzip_of_zeros(mib: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip framing
    chunk = bytes(1024 * 1024)
    return b"".join(packer.compress(chunk) for _ in range(mib)) + packer.flush()


def test_it_reads_only_the_start_of_a_gzip_bomb():
    bomb = _gzip_of_zeros(256)  # about 250 KiB that inflate to 256 MiB
    tracemalloc.start()
    try:
        text = body_text(bomb, "gzip", SEARCH_BODY_BYTES)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text == "\x00" * SEARCH_BODY_BYTES
    assert peak < 8 * 1024 * 1024


def test_it_reads_a_broken_gzip_body_as_no_text():
    assert body_text(b"\x1f\x8b\x08\x00garbage", "gzip", 100) is None
    assert body_text(b"\x1f\x8b\x08\x00garbage", "gzip") is None


def test_it_cleans_any_value_into_storable_text():
    assert clean(b"\xffkey\x00") == "\ufffdkey\ufffd"
    assert clean({"base64": "/w=="}) == ""
    assert clean(None) == ""
    assert clean(7) == ""
    assert clean("lone \udcff surrogate") == "lone ? surrogate"
    assert clean("x" * 300) == "x" * 255
