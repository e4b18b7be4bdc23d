"""What an edit changes: its new body, headers and properties checked as the broker would take
them (field by field, every bad one reported), and the diff its audit row keeps."""

import base64
import binascii
import difflib
import json

from dlq.actions import replay
from dlq.actions.errors import ActionError
from dlq.broker import amqp, codec
from dlq.messages.history import DIFF_TEXT_LIMIT
from dlq.messages.ingest import body_text

# Property values refused although their octet would carry them: AMQP 0-9-1 defines
# delivery_mode 1 and 2 only. `priority` is not here: its spec text names 0-9, but RabbitMQ
# 3.10 and 4.0 take and deliver 0-255 and producers send them (a priority queue caps it).
BROKER_RANGES = {"delivery_mode": range(1, 3)}

# What a body diff reads (decoded): the diff keeps 64 KiB, and a gzip body that inflates to
# gigabytes must not be inflated whole just to be compared.
DIFF_READ_LIMIT = 1024 * 1024


def new_body(body_text_value, body_base64) -> bytes | None:
    if body_text_value is not None and body_base64 is not None:
        raise ActionError({"body_text": ["give body_text or body_base64, not both"]})
    if body_text_value is not None:
        if not isinstance(body_text_value, str):
            raise ActionError({"body_text": ["must be a string"]})
        return body_text_value.encode("utf-8", "surrogatepass")
    if body_base64 is not None:
        try:
            return base64.b64decode(body_base64, validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise ActionError({"body_base64": ["is not valid base64"]}) from None
    return None


def validated_properties(properties, stored: dict) -> dict:
    """Each property checked on its own, so every bad one is reported (field by field). A
    value the message came with is never refused for its range: the broker took it."""
    if not isinstance(properties, dict):
        raise ActionError({"properties": ["must be an object of AMQP properties"]})
    if "headers" in properties:
        raise ActionError({"properties": ["headers are edited through the headers field"]})
    errors = {}
    for name, value in properties.items():
        try:
            amqp.make_properties({name: value}, None).encode()
        except (codec.AmqpValueError, TypeError) as e:
            errors[f"properties.{name}"] = [str(e)]
            continue
        allowed = BROKER_RANGES.get(name)
        if allowed is not None and value not in allowed and value != stored.get(name):
            # AMQP allows any octet, RabbitMQ closes the publishing channel on these.
            errors[f"properties.{name}"] = [f"must be {allowed[0]} to {allowed[-1]}"]
    if errors:
        raise ActionError(errors)
    return properties


def validated_headers(headers) -> dict:
    """Each header checked on its own, so every bad one is reported (field by field)."""
    if not isinstance(headers, dict):
        raise ActionError({"headers": ["must be an object of typed header values"]})
    errors = {}
    for key, value in headers.items():
        try:
            codec.encode_table({key: value})
        except codec.AmqpValueError as e:
            errors[f"headers.{key}"] = [str(e)]
    if errors:
        raise ActionError(errors)
    return headers


def _is_json(content_type) -> bool:
    if not isinstance(content_type, str):  # {"base64": ...}: not UTF-8, so not JSON's name
        return False
    kind = content_type.split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


def check_body(body: bytes, properties: dict) -> None:
    """A new body the broker would take, and that is JSON when its content type says so."""
    if len(body) > replay.max_message_bytes():
        raise ActionError({"body": [f"is {len(body)} bytes, more than the broker accepts"]})
    if _is_json(properties.get("content_type")) and not properties.get("content_encoding"):
        try:
            json.loads(body)
        except ValueError as e:
            problem = f"content type is JSON but the body is not: {e}"
            raise ActionError({"body_text": [problem]}) from None
        except RecursionError:
            problem = "content type is JSON but the body nests too deeply to be read as JSON"
            raise ActionError({"body_text": [problem]}) from None


def body_diff(old: bytes, new: bytes, encoding: str) -> dict:
    old_text = body_text(old, encoding, DIFF_READ_LIMIT)
    new_text = body_text(new, encoding, DIFF_READ_LIMIT)
    if old_text is None or new_text is None:
        return {"before_base64": base64.b64encode(old[:DIFF_TEXT_LIMIT]).decode(),
                "after_base64": base64.b64encode(new[:DIFF_TEXT_LIMIT]).decode(),
                "before_size": len(old), "after_size": len(new)}  # fmt: skip
    unified = difflib.unified_diff(
        old_text.splitlines(keepends=True), new_text.splitlines(keepends=True), "before", "after"
    )
    return {"before": old_text[:DIFF_TEXT_LIMIT], "after": new_text[:DIFF_TEXT_LIMIT],
            "unified": "".join(unified)[:DIFF_TEXT_LIMIT],
            "before_size": len(old), "after_size": len(new)}  # fmt: skip


def map_diff(old: dict, new: dict) -> dict:
    return {
        key: {"before": old.get(key), "after": new.get(key)}
        for key in list(old) + [k for k in new if k not in old]
        if old.get(key) != new.get(key)
    }
