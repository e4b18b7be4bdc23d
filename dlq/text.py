"""Safe text helpers every package shares (as healthchecks keeps them in `hc/lib/`): no
Django, no I/O, so the drainer's compiled hot path (messages/ingest.py) imports it cheaply."""

CHAR_LIMIT = 255


def clean(text, limit: int | None = CHAR_LIMIT) -> str:
    """A database-safe copy of untrusted text for derived columns (NUL is not allowed)."""
    if isinstance(text, str) and text.isascii() and "\x00" not in text:  # fast: the usual case
        return text[:limit] if limit else text
    if isinstance(text, bytes):  # pika's exchange or routing key when it is not UTF-8
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):  # {"base64": ...}: a short string that was not UTF-8
        return ""
    text = text.replace("\x00", "\ufffd")
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates
    return text[:limit] if limit else text
