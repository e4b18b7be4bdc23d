"""A selection in words: the one place that says what a message filter (the list's, a bulk
review's, a job's frozen one) or a set of chosen messages holds, as a reader says it:
"26 parked messages of CapturePayment · rejected in demo.payments since 2025-03-10 12:00 UTC".

The words come as parts, so each page shows them its own safe way: plain words (`str`),
untrusted names (`Name`: a group, a queue, a type; a page shows them through `visible`),
times (`datetime`: a page shows them with their zone) and links (`Link`). `str()` of them is
plain text with times in UTC. A group is named as the groups page names it (groups.group_name),
never by its hash while any of its messages is stored.
"""

from dataclasses import dataclass
from datetime import UTC, datetime

from django.template.defaultfilters import pluralize

from dlq.broker import names
from dlq.messages.groups import name_of


class Name(str):
    """Untrusted text that names something: shown escaped, as a name."""


@dataclass(frozen=True)
class Link:
    text: str
    url: str


@dataclass(frozen=True)
class Words:
    parts: tuple

    def __str__(self) -> str:
        return "".join(plain(part) for part in self.parts)

    def __add__(self, other) -> "Words":
        return Words(self.parts + (other.parts if isinstance(other, Words) else (other,)))


def plain(part) -> str:
    if isinstance(part, datetime):
        return f"{part.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    return part.text if isinstance(part, Link) else str(part)


def words(*parts) -> Words:
    return Words(tuple(part for part in parts if part not in ("", None)))


def describe(filters: dict | None, count: int | None = None, chosen: bool = False) -> Words:
    """`filters` (MessageFilter's names, typed values) in words, led by `count` when known;
    `chosen` for messages picked one by one (no filter)."""
    filters = filters or {}
    return words(_head(filters, count, chosen), *_what(filters), *_where(filters),
                 *_when(filters), *_search(filters))  # fmt: skip


def of_job(filters: dict | None, total: int) -> Words:
    """A bulk job's selection: a filter (frozen; a job takes only what of it is parked) or
    messages chosen one by one."""
    if filters is None:
        return describe({}, total, chosen=True)
    return describe({"status": "parked", **filters}, total)


def _head(filters: dict, count: int | None, chosen: bool) -> str:
    noun = "message" + (pluralize(count) if count is not None else "s")
    head = " ".join(filter(None, ["chosen" if chosen else "", filters.get("status"), noun]))
    if count is not None:
        return f"{count:,} {head}"
    return head if chosen or filters else f"all {head}"


def _what(filters: dict) -> list:
    parts = []
    if filters.get("group"):
        known = name_of(filters["group"])
        parts += [" of ", Name(known)] if known else [" of group ", Name(filters["group"])]
    if filters.get("message_type"):
        parts += [" of type ", Name(filters["message_type"])]
    if filters.get("exception_type"):
        parts += [" failing with ", Name(filters["exception_type"])]
    if filters.get("reason"):
        parts += [" with death reason ", Name(filters["reason"])]
    if filters.get("trace_id"):
        parts += [" of trace ", Name(filters["trace_id"])]
    return parts


def _where(filters: dict) -> list:
    parts = []
    if filters.get("queue"):
        parts += [" in ", Name(names.qualified(filters.get("vhost") or "/", filters["queue"]))]
    elif filters.get("vhost"):
        parts += [" in vhost ", Name(filters["vhost"])]
    if filters.get("exchange"):
        parts += [" through exchange ", Name(filters["exchange"])]
    if filters.get("routing_key"):
        parts += [" with routing key ", Name(filters["routing_key"])]
    return parts


def _time(value):
    """A time, also as a stored job filter keeps it (json.dumps(default=str))."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return Name(value)
    return value


def _when(filters: dict) -> list:
    after, before = _time(filters.get("received_after")), _time(filters.get("received_before"))
    if after and before:
        return [" received from ", after, " to before ", before]
    if after:
        return [" since ", after]
    return [" received before ", before] if before else []


def _search(filters: dict) -> list:
    return [" containing “", Name(filters["q"]), "”"] if filters.get("q") else []
