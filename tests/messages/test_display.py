"""dlq/display.py on its own: bounded inflating and the page's choice of JSON, text or hex."""

import gzip

from dlq.messages import display


def test_a_body_of_exactly_the_cap_is_not_cut():
    inflated = display.inflate(gzip.compress(b"a" * 100), 100)
    assert (inflated.data, inflated.truncated) == (b"a" * 100, False)


def test_concatenated_gzip_members_are_all_inflated_within_one_cap():
    body = gzip.compress(b"first,") + gzip.compress(b"second")
    assert display.inflate(body, 100).data == b"first,second"
    cut = display.inflate(body, 8)
    assert (cut.data, cut.truncated) == (b"first,se", True)


def test_corrupt_or_cut_gzip_is_shown_as_the_raw_bytes():
    whole = gzip.compress(b"hello" * 100)
    assert display.inflate(whole[:-10], 10_000) is None
    assert display.inflate(whole + b"junk", 10_000) is None
    view = display.render(whole[:20], "gzip")
    assert view.kind == "hex" and not view.gzip


def test_gzip_is_only_inflated_when_the_encoding_says_so():
    body = gzip.compress(b"hello")
    assert display.render(body, "").kind == "hex"
    assert display.render(body, "gzip").text == "hello"
    assert display.api_text(body, "") == (None, False)
    assert display.api_text(body, "gzip") == ("hello", False)


def test_text_cut_inside_a_character_keeps_the_whole_characters_before():
    body = "é".encode() * (display.PAGE_LIMIT // 2) + "é".encode()
    view = display.render(body[: display.PAGE_LIMIT + 1], "")
    assert view.kind == "text" and view.truncated
    assert view.text == "é" * (display.PAGE_LIMIT // 2)


def test_json_is_re_indented_and_other_text_is_left_alone():
    assert display.render(b'{"a":[1,2]}', "").text == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert display.render(b"{not json", "", "application/json").kind == "text"
    assert display.render(b"plain words", "").kind == "text"
    assert display.render("naïve ✓".encode(), "").text == "naïve ✓"


def test_the_hex_dump_is_capped():
    view = display.render(b"\xff" * (display.HEX_LIMIT + 1), "")
    assert view.kind == "hex" and view.truncated
    assert view.text.count("\n") + 1 == display.HEX_LIMIT // display.HEX_ROW
