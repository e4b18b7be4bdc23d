"""dlq/display.py on its own: bounded inflating and the page's choice of JSON, text or hex."""

import gzip
import json

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


def test_hidden_characters_are_shown_as_escapes():
    assert display.visible("\u202eevil.exe") == "\\u202eevil.exe"
    assert display.visible("x-nul\x00name\x7f") == "x-nul\\x00name\\x7f"
    assert (
        display.visible("a\u2066b\u2069\u200e\u200f\u061c")
        == "a\\u2066b\\u2069\\u200e\\u200f\\u061c"
    )
    assert display.visible("tab\there\nline") == "tab\\there\\nline"
    # A byte that was not UTF-8 (a surrogate escape) is that byte; a C1 control is a character.
    assert display.visible(b"\xff\xfe<img>".decode("utf-8", "surrogateescape")) == "\\xff\\xfe<img>"
    assert display.visible("\x85") == "\\u0085"
    assert display.visible("\ud800") == "\\ud800"  # a lone surrogate no byte made
    assert display.visible("plain, Ünïcode ✓ שלום") == "plain, Ünïcode ✓ שלום"


def test_text_in_a_block_keeps_its_tabs_and_line_ends():
    assert display.visible("a\tb\r\nc\x00\u202e", block=True) == "a\tb\r\nc\\x00\\u202e"
    parts = list(display.visible_parts("ok\x00\x01ok", block=True))
    assert parts == [("ok", False), ("\\x00\\x01", True), ("ok", False)]


def test_right_to_left_text_is_told_apart():
    assert display.right_to_left("שלום") and display.right_to_left("a ملف b")
    assert not display.right_to_left("evil.exe") and not display.right_to_left("Ünïcode ✓")


def test_json_text_shows_hidden_characters_and_reads_back_the_same():
    value = {"x-nul\x00": "\u202eevil\x7f", "b\udcff": ["\u2066", "\x85 ok ✓"]}
    text = display.json_text(value)
    assert "\u202e" not in text and "\x7f" not in text and "\udcff" not in text
    assert "\\u202eevil\\u007f" in text and "\\u0000" in text and "✓" in text
    text.encode("utf-8")  # a page can write it
    assert json.loads(text) == value


def test_a_text_body_holding_control_bytes_is_shown_as_hex():
    assert display.render(b"line one\r\n\tline two\n", "").kind == "text"
    view = display.render(b"rej\x00ected", "")
    assert view.kind == "hex" and "72 65 6a 00 65" in view.text
    assert display.render("\u202eevil.exe".encode(), "").kind == "text"  # the page escapes it
