"""A stored body made readable: gzip inflated within a hard cap, then pretty JSON, text or a
hex dump. For display only; the stored bytes are never changed and replays send them as-is.

A gzip body is untrusted: a few hundred kilobytes can inflate to gigabytes (a "gzip bomb"),
so inflating always stops at a byte cap and says that it did.
"""

import json
import re
import unicodedata
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime

from dlq.messages.deaths import x_death_entries
from dlq.text import clean

# What the API's body_text may hold when a body is inflated (beyond: cut, with a flag).
API_INFLATE_LIMIT = 8 * 1024 * 1024
# What a page shows of a body; the rest is behind the download link.
PAGE_LIMIT = 256 * 1024
HEX_LIMIT = 16 * 1024  # a hex dump is four times the size of its bytes
HEX_ROW = 16
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Inflated:
    data: bytes
    truncated: bool  # the cap was reached before the end of the stream


def inflate(body: bytes, limit: int) -> Inflated | None:
    """The gzip body inflated to at most `limit` bytes, or None when it is not valid gzip.

    Members after the first (concatenated gzip) are inflated too, within the same cap."""
    out, rest = [], body
    budget = limit
    while rest[:2] == GZIP_MAGIC:
        inflater = zlib.decompressobj(wbits=31)
        try:
            chunk = inflater.decompress(rest, budget + 1)  # one more: tells "cut" from "exact"
        except zlib.error:
            return None
        if len(chunk) > budget:
            out.append(chunk[:budget])
            return Inflated(b"".join(out), True)
        if not inflater.eof:
            return None  # the stream ends early: corrupt, show the raw bytes instead
        out.append(chunk)
        budget -= len(chunk)
        rest = inflater.unused_data
    if rest.strip(b"\x00"):  # trailing junk that is not another member
        return None
    return Inflated(b"".join(out), False)


def decoded(body: bytes, content_encoding: str, limit: int) -> tuple[bytes, bool, bool]:
    """(bytes to read, whether they are cut at `limit`, whether gzip was inflated)."""
    if (content_encoding or "").strip().lower() == "gzip" and body[:2] == GZIP_MAGIC:
        inflated = inflate(body, limit)
        if inflated is not None:
            return inflated.data, inflated.truncated, True
    return body[:limit], len(body) > limit, False


def as_text(data: bytes, truncated: bool) -> str | None:
    """UTF-8 text, or None; a cut inside the last character is forgiven when truncated."""
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        if truncated and e.start >= len(data) - 3 and e.reason == "unexpected end of data":
            return data[: e.start].decode()
        return None


def api_text(body: bytes, content_encoding: str) -> tuple[str | None, bool]:
    """The API detail's body_text and whether it was cut at API_INFLATE_LIMIT.

    A plain body is given whole (the stored bytes are in memory already); only inflating
    is capped."""
    if (content_encoding or "").strip().lower() != "gzip" or body[:2] != GZIP_MAGIC:
        return as_text(body, False), False
    data, truncated, _ = decoded(body, content_encoding, API_INFLATE_LIMIT)
    return as_text(data, truncated), truncated


# Control characters no text shows (NUL, ESC...; tab and line ends are text): a body holding
# one is shown as a hex dump, where every byte is plain to see.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class BodyView:
    kind: str  # json, text or hex
    text: str
    truncated: bool  # the page shows only part of it: download the raw bytes
    gzip: bool  # inflated for display
    size: int  # stored (raw) bytes


def render(body: bytes, content_encoding: str, content_type: str = "") -> BodyView:
    """What the message page shows of a body."""
    data, truncated, was_gzip = decoded(body, content_encoding, PAGE_LIMIT)
    text = as_text(data, truncated)
    if text is None or _CONTROL.search(text):  # control bytes: binary, shown byte by byte
        cut = truncated or len(data) > HEX_LIMIT
        return BodyView("hex", hex_dump(data[:HEX_LIMIT]), cut, was_gzip, len(body))
    pretty = None if truncated else pretty_json(text, content_type)
    if pretty is not None:
        return BodyView("json", pretty, False, was_gzip, len(body))
    return BodyView("text", text, truncated, was_gzip, len(body))


def pretty_json(text: str, content_type: str) -> str | None:
    """Indented JSON when the text is a JSON object or array (whatever the content type
    claims: senders often leave it out), else None."""
    stripped = text.lstrip()
    if stripped[:1] not in ("{", "[") and "json" not in (content_type or "").lower():
        return None
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to re-indent
        return None


def hex_dump(data: bytes) -> str:
    """Offset, sixteen bytes in hex, and their printable ASCII (others as '.')."""
    rows = []
    for offset in range(0, len(data), HEX_ROW):
        chunk = data[offset : offset + HEX_ROW]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        rows.append(f"{offset:08x}  {hexes:<{HEX_ROW * 3 - 1}}  {ascii_}")
    return "\n".join(rows)


PREVIEW_CHARS = 4000  # a forged header can be huge: the page shows its start


# The wire types of the basic properties (AMQP 0-9-1), which the stored JSON leaves implicit.
PROPERTY_TYPES = {"delivery_mode": "octet", "priority": "octet", "timestamp": "timestamp"}


FOLD_CHARS = 160  # a longer value (or one of several lines) is folded behind its start
# Shown as the death timeline: in the table only behind a click.
TIMELINE_HEADERS = frozenset(["x-death"])


@dataclass(frozen=True)
class FieldRow:
    name: str
    type: str
    value: str
    moment: datetime | None = None  # a timestamp, shown as a date in the reader's zone

    @property
    def folded(self) -> bool:
        return self.name in TIMELINE_HEADERS or len(self.value) > FOLD_CHARS or "\n" in self.value

    @property
    def summary(self) -> str:
        if self.name in TIMELINE_HEADERS:
            return "shown above as the death timeline; the typed value"
        first = self.value.split("\n", 1)[0]
        return first[:80] + "…"


# What a page never writes as it is: C0 controls and DEL, C1 controls, the bidi controls
# (U+202E turns "\u202eevil.exe" into "exe.live" on screen) and lone surrogates (a byte that
# was not UTF-8, kept by surrogateescape so that it round-trips; no page can encode one).
_HIDDEN = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_HIDDEN_UNICODE = re.compile(f"[{_HIDDEN}]+")
_HIDDEN_INLINE = re.compile(f"[\x00-\x1f{_HIDDEN}]+")
_HIDDEN_BLOCK = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_HIDDEN}]+")  # keeps \t \n \r
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Characters that write right to left: text holding one is isolated (<bdi>), or it would
# reorder what stands beside it on the page.
_RIGHT_TO_LEFT = frozenset(["R", "AL", "AN"])


def escaped(char: str) -> str:
    """The visible escape of one hidden character: \\x00, \\n, \\u202e; a byte that was not
    UTF-8 as \\xff (a C1 control, a character, is \\u0085: never mistaken for a byte)."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's stand-in for one byte
        return f"\\x{code - 0xDC00:02x}"
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def visible_parts(text: str, block: bool = False):
    """`text` cut into (piece, hidden): runs of ordinary text, and runs of hidden characters
    as their escapes. `block` text (a body, a stack trace) keeps its tabs and line ends."""
    pattern = _HIDDEN_BLOCK if block else _HIDDEN_INLINE
    start = 0
    for match in pattern.finditer(text):
        if match.start() > start:
            yield text[start : match.start()], False
        yield "".join(map(escaped, match.group())), True
        start = match.end()
    if start < len(text):
        yield text[start:], False


def hides(text: str) -> bool:
    """Whether `text` holds a character a page never writes as it is (tabs and line ends
    aside): a text box would show it, or change it."""
    return _HIDDEN_BLOCK.search(text) is not None


def visible(text: str, block: bool = False) -> str:
    """Untrusted text as a page may show it: every hidden character as its escape. The one
    helper for it; templates use the `visible` filter (dlq/templatetags/dlq_text.py)."""
    return "".join(piece for piece, _ in visible_parts(text, block))


def right_to_left(text: str) -> bool:
    """Whether `text` holds a character written right to left (Hebrew, Arabic...)."""
    return not text.isascii() and any(
        unicodedata.bidirectional(char) in _RIGHT_TO_LEFT for char in text
    )


def json_text(value) -> str:
    """Indented JSON with every hidden character as a \\u escape: it reads back the same
    (a lone surrogate too), and a textarea shows it as it is, bidi controls included."""
    text = json.dumps(value, indent=2, ensure_ascii=False)  # C0 in strings: escaped already
    return _HIDDEN_UNICODE.sub(
        lambda match: "".join(f"\\u{ord(char):04x}" for char in match.group()), text
    )


def shown(typed) -> str:
    """A typed value as the page writes it: scalars plainly, bytes as base64, nested values
    (tables, arrays) as indented typed JSON."""
    if not isinstance(typed, dict):
        return _json(typed)
    kind = typed.get("type")
    if "base64" in typed:
        return f"base64:{typed['base64']}"[:PREVIEW_CHARS]
    value = typed.get("value")
    if kind in ("table", "array"):
        return _json(value)
    if kind == "timestamp" and isinstance(value, int):
        return f"{value} (seconds since 1970)"
    return str(value)[:PREVIEW_CHARS]


def _json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)[:PREVIEW_CHARS]


def header_rows(headers: dict) -> list[FieldRow]:
    return [
        FieldRow(
            str(name),
            str(typed.get("type", "?")) if isinstance(typed, dict) else "?",
            shown(typed),
            _moment(typed.get("value")) if _is_timestamp(typed) else None,
        )
        for name, typed in headers.items()
    ]


def _is_timestamp(typed) -> bool:
    return isinstance(typed, dict) and typed.get("type") == "timestamp"


def _moment(seconds) -> datetime | None:
    """A timestamp as a date; None for one no calendar holds (a forged header)."""
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def property_rows(properties: dict) -> list[FieldRow]:
    """Properties are plain JSON; a short string that is not UTF-8 is {"base64": ...}."""
    rows = []
    for name, value in properties.items():
        if isinstance(value, dict) and "base64" in value:
            rows.append(FieldRow(name, "shortstr (bytes)", f"base64:{value['base64']}"))
        elif name == "timestamp":
            rows.append(FieldRow(name, "timestamp", shown({"type": "timestamp", "value": value}),
                                 _moment(value)))  # fmt: skip
        else:
            rows.append(FieldRow(name, PROPERTY_TYPES.get(name, "shortstr"), str(value)))
    return rows


def death_timeline(headers: dict) -> list[dict]:
    """The x-death entries as the page lists them, their texts as the derived columns hold
    them (ingest.clean: NUL, which PostgreSQL refuses, as U+FFFD): a reason reads the same
    in the timeline as in the summary, the list and the groups."""
    return [
        {**entry, "queue": clean(entry["queue"], None), "reason": clean(entry["reason"], None),
         "exchange": clean(entry["exchange"], None),
         "routing_keys": [clean(key, None) for key in entry["routing_keys"]]}
        for entry in x_death_entries(headers)
    ]  # fmt: skip
