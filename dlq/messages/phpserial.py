"""A strict, bounded reader of PHP's `serialize()` format, for Symfony Messenger's
PhpSerializer bodies (dlq/messages/symfony.py).

The body is untrusted. Nothing is ever instantiated: an object becomes a `PhpObject` (its
class name and its properties, names without PHP's visibility prefixes), an array a dict.
The reader knows the scalar types, strings, arrays, objects and enum cases; anything else
(custom `C:` serialization, references, a malformed length) is refused with `Refused`, as
is input past the limits, so a hostile body costs bounded work and never more than a
refusal.
"""

from dataclasses import dataclass, field

MAX_INPUT = 1024 * 1024  # bytes: a bigger body is not read at all (a fraction of a second)
MAX_DEPTH = 32
MAX_ITEMS = 50_000  # array elements and object properties, all levels together


class Refused(ValueError):
    """Not PHP serialization this reader accepts."""


@dataclass
class PhpObject:
    class_name: str
    properties: dict = field(default_factory=dict)


def unslash(data: bytes) -> bytes:
    """PHP's stripslashes() of what addslashes() writes (PhpSerializer sends
    addslashes(serialize($envelope))): \\\\, \\", \\' and \\0 (NUL). Any other backslash is
    left as it is, and the reader then refuses the body. Linear, in C: bytes.replace."""
    if len(data) > 2 * MAX_INPUT:
        raise Refused(f"longer than {2 * MAX_INPUT} bytes")
    parts = data.split(b"\\\\")
    return b"\\".join(
        p.replace(b'\\"', b'"').replace(b"\\'", b"'").replace(b"\\0", b"\x00") for p in parts
    )


def loads(data: bytes):
    """The value `data` holds, exactly and entirely (trailing bytes are refused)."""
    if len(data) > MAX_INPUT:
        raise Refused(f"longer than {MAX_INPUT} bytes")
    reader = _Reader(data)
    value = reader.value(0)
    if reader.pos != len(data):
        raise Refused(f"trailing bytes at {reader.pos}")
    return value


def property_name(name) -> str:
    """A property's name without its visibility: "\\0Class\\0name" (private) and
    "\\0*\\0name" (protected) are both "name"."""
    text = name if isinstance(name, str) else str(name)
    return text.rsplit("\x00", 1)[-1] if text.startswith("\x00") else text


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos, self.items = data, 0, 0

    def value(self, depth: int):
        if depth > MAX_DEPTH:
            raise Refused("nested too deep")
        kind = self._take(2)
        if kind == b"N;":
            return None
        if kind[1:] != b":":
            raise Refused(f"unknown type at {self.pos - 2}")
        tag = kind[:1]
        if tag == b"b":
            flag = self._until(b";")
            if flag not in (b"0", b"1"):
                raise Refused("a boolean that is neither 0 nor 1")
            return flag == b"1"
        if tag == b"i":
            return self._integer(self._until(b";"))
        if tag == b"d":
            return self._float(self._until(b";"))
        if tag == b"s":
            return self._string()
        if tag == b"a":
            return self._array(depth)
        if tag == b"O":
            return self._object(depth)
        if tag == b"E":  # an enum case, "Class:Case"
            return PhpObject(self._string(), {})
        raise Refused(f"type {tag!r} is not read (custom serialization or a reference)")

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise Refused("truncated")
        chunk, self.pos = self.data[self.pos : end], end
        return chunk

    def _until(self, stop: bytes) -> bytes:
        end = self.data.find(stop, self.pos, self.pos + 40)  # no number is longer
        if end < 0:
            raise Refused(f"expected {stop!r} near {self.pos}")
        chunk, self.pos = self.data[self.pos : end], end + 1
        return chunk

    def _expect(self, literal: bytes) -> None:
        if self._take(len(literal)) != literal:
            raise Refused(f"expected {literal!r} before {self.pos}")

    def _integer(self, text: bytes) -> int:
        digits = text[1:] if text[:1] == b"-" else text
        if not digits or not digits.isdigit() or len(digits) > 19:
            raise Refused(f"not an integer: {text[:20]!r}")
        return int(text)

    def _float(self, text: bytes) -> float:
        try:
            return float(text.decode("ascii"))  # also INF, -INF, NAN, as PHP writes them
        except (UnicodeDecodeError, ValueError):
            raise Refused(f"not a number: {text[:20]!r}") from None

    def _length(self) -> int:
        length = self._integer(self._until(b":"))
        if length < 0 or length > len(self.data) - self.pos:
            raise Refused("a length past the end")
        return length

    def _string(self) -> str:
        length = self._length()
        self._expect(b'"')
        raw = self._take(length)
        self._expect(b'";')
        return raw.decode("utf-8", "replace")

    def _count(self) -> int:
        count = self._integer(self._until(b":"))
        self.items += count
        if count < 0 or self.items > MAX_ITEMS:
            raise Refused("too many elements")
        return count

    def _members(self, count: int, depth: int, object_properties: bool) -> dict:
        self._expect(b"{")
        members = {}
        for _ in range(count):
            key = self.value(depth + 1)
            if not isinstance(key, int | str) or isinstance(key, bool):
                raise Refused("a key that is neither an integer nor a string")
            if object_properties:
                key = property_name(key)
            members[key] = self.value(depth + 1)
        self._expect(b"}")
        return members

    def _array(self, depth: int) -> dict:
        return self._members(self._count(), depth, object_properties=False)

    def _object(self, depth: int) -> PhpObject:
        length = self._length()
        self._expect(b'"')
        name = self._take(length).decode("utf-8", "replace")
        self._expect(b'":')
        return PhpObject(name, self._members(self._count(), depth, object_properties=True))
