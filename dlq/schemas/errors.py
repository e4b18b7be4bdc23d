"""The 400 body for bad input: field-by-field messages, in the same words for the API and
the pages."""

from ninja import Schema
from pydantic import ValidationError


class ErrorOut(Schema):
    detail: str


class InvalidInput(Schema):
    detail: str = "invalid input"
    errors: dict[str, list[str]]


def field_errors(errors: list[dict]) -> dict[str, list[str]]:
    """ninja's validation errors, as {field: [message, ...]}; nested fields are dotted."""
    out: dict[str, list[str]] = {}
    for error in errors:
        out.setdefault(_field(error["loc"]), []).append(error_message(error))
    return out


def _field(loc: tuple) -> str:
    """("query", "limit") -> limit; ("body", "payload", "headers", "x") -> headers.x."""
    parts = list(loc[1:])
    if loc and loc[0] == "body" and len(parts) > 1:
        parts = parts[1:]  # the view's parameter name
    return ".".join(str(part) for part in parts) or "__all__"


def error_message(error: dict) -> str:
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "must be a whole number"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}"
    if kind == "missing":
        return "is required"
    return error["msg"]


def pydantic_errors(error: ValidationError) -> dict[str, list[str]]:
    """A pydantic error as {field: [message]}, in the API's words."""
    out: dict[str, list[str]] = {}
    for problem in error.errors():
        name = ".".join(str(part) for part in problem["loc"]) or "__all__"
        out.setdefault(name, []).append(error_message(problem))
    return out
