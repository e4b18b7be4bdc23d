"""dlq/bodyview.py on its own: bounded inflating and the page's choice of JSON, text or hex."""

import gzip

from dlq import bodyview


def test_a_body_of_exactly_the_cap_is_not_cut():
    inflated = bodyview.inflate(gzip.compress(b"a" * 100), 100)
    assert (inflated.data, inflated.truncated) == (b"a" * 100, False)


def test_concatenated_gzip_members_are_all_inflated_within_one_cap():
    body = gzip.compress(b"first,") + gzip.compress(b"second")
    assert bodyview.inflate(body, 100).data == b"first,second"
    cut = bodyview.inflate(body, 8)
    assert (cut.data, cut.truncated) == (b"first,se", True)


def test_corrupt_or_cut_gzip_is_shown_as_the_raw_bytes():
    whole = gzip.compress(b"hello" * 100)
    assert bodyview.inflate(whole[:-10], 10_000) is None
    assert bodyview.inflate(whole + b"junk", 10_000) is None
    view = bodyview.render(whole[:20], "gzip")
    assert view.kind == "hex" and not view.gzip


def test_gzip_is_only_inflated_when_the_encoding_says_so():
    body = gzip.compress(b"hello")
    assert bodyview.render(body, "").kind == "hex"
    assert bodyview.render(body, "gzip").text == "hello"
    assert bodyview.api_text(body, "") == (None, False)
    assert bodyview.api_text(body, "gzip") == ("hello", False)


def test_text_cut_inside_a_character_keeps_the_whole_characters_before():
    body = "é".encode() * (bodyview.PAGE_LIMIT // 2) + "é".encode()
    view = bodyview.render(body[: bodyview.PAGE_LIMIT + 1], "")
    assert view.kind == "text" and view.truncated
    assert view.text == "é" * (bodyview.PAGE_LIMIT // 2)


def test_json_is_re_indented_and_other_text_is_left_alone():
    assert bodyview.render(b'{"a":[1,2]}', "").text == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert bodyview.render(b"{not json", "", "application/json").kind == "text"
    assert bodyview.render(b"plain words", "").kind == "text"
    assert bodyview.render("naïve ✓".encode(), "").text == "naïve ✓"


def test_the_hex_dump_is_capped():
    view = bodyview.render(b"\xff" * (bodyview.HEX_LIMIT + 1), "")
    assert view.kind == "hex" and view.truncated
    assert view.text.count("\n") + 1 == bodyview.HEX_LIMIT // bodyview.HEX_ROW
