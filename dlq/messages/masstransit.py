"""The message type MassTransit's JSON envelope names, read from the body.

MassTransit's default serializer on RabbitMQ sends `application/vnd.masstransit+json`: an
envelope `{"messageId", ..., "messageType": ["urn:message:Namespace:Type", ...], "message",
...}` whose first URN is the message's own type (the others are its interfaces and bases).
No header names the type unless MassTransit moved the message to its error queue
(`MT-Fault-MessageType`) or used a raw serializer (`MT-MessageType`), so a message the broker
dead-lettered has its type only here. The URN is kept as MassTransit writes it, as those two
headers are: one type, one name, one failure group, whichever way it was read.

Bodies are untrusted and this runs in the drainer for every message of that content type:
only the first ENVELOPE_BYTES are looked at, the envelope is read field by field up to
`messageType` (which MassTransit writes before the message itself, so a large message is
never parsed), and anything else than an envelope (broken JSON, wrong types, a compressed
body) names no type, never an error.
"""

import json
import re

CONTENT_TYPE = "application/vnd.masstransit+json"
# The envelope's fields before messageType are ids and addresses: a few hundred bytes.
ENVELOPE_BYTES = 16 * 1024
# A content encoding that still leaves JSON text in the body (clients set the charset there).
PLAIN_ENCODINGS = frozenset(["", "identity", "utf-8", "utf8"])

_OPEN = re.compile(r"[ \t\n\r]*\{")
# A field's name and colon; a name with escapes is none of the envelope's.
_NAME = re.compile(r'[ \t\n\r]*"([^"\\]*)"[ \t\n\r]*:[ \t\n\r]*')
_COMMA = re.compile(r"[ \t\n\r]*,")
_decode = json.JSONDecoder().raw_decode


def _masstransit(content_type) -> bool:
    """A media type is case-insensitive and may carry parameters (`; charset=utf-8`)."""
    if not isinstance(content_type, str):
        return False
    head, rest = content_type[: len(CONTENT_TYPE)], content_type[len(CONTENT_TYPE) :]
    return head.lower() == CONTENT_TYPE and (not rest or rest.lstrip(" \t")[:1] == ";")


def message_type(body: bytes, content_type, content_encoding) -> str:
    """The first URN of the envelope's `messageType`, or "" for any other body."""
    if content_type != CONTENT_TYPE and not _masstransit(content_type):
        return ""
    if isinstance(content_encoding, str):
        if content_encoding.lower() not in PLAIN_ENCODINGS:
            return ""  # gzip and the like: bytes, not JSON
    elif content_encoding is not None:  # not UTF-8 ({"base64": ...})
        return ""
    data = body[:ENVELOPE_BYTES]
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        if len(data) == len(body) or e.end < len(data):
            return ""  # not UTF-8, so not JSON
        text = data[: e.start].decode()  # the bound cut a character in two
    try:
        types = _field(text, "messageType")
    except (ValueError, RecursionError):  # not JSON, cut short, or nested past the stack
        return ""
    if isinstance(types, list) and types and isinstance(types[0], str):
        return types[0]
    return ""


def _field(text: str, name: str):
    """The value of the top-level field `name` of the JSON object `text` begins with.

    Field by field, each value decoded whole but none after `name`: what follows may be cut
    off at ENVELOPE_BYTES. None when the object has no such field before it ends or is cut.
    """
    found = _OPEN.match(text)
    if found is None:
        return None
    at = found.end()
    while True:
        field = _NAME.match(text, at)
        if field is None:
            return None  # the end of the object, or not an object
        value, at = _decode(text, field.end())
        if field.group(1) == name:
            return value
        comma = _COMMA.match(text, at)
        if comma is None:
            return None
        at = comma.end()
