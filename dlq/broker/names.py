"""Queues across an estate: `VHOST/QUEUE` patterns, and how a queue is named to a reader.

A pattern is `QUEUE` (in the default vhost: the one in DLQ_BROKER_URL) or `VHOST/QUEUE`,
each part a name or a shell-style glob. A vhost name holds a slash as `%2F` (`%2F/a.dlq` is
vhost `/`), so the first raw slash always ends the vhost part and a queue part may hold
slashes of its own. Pure Python: settings validate DLQ_QUEUES with it at start-up.
"""

import fnmatch
import re
from dataclasses import dataclass

# How the drainer names itself to the broker: connections "dlq-drain HOST pid N ...", consumer
# tags "dlq-drain.HEX" (dlq/health/drained.py tells its consumers from a service's by them).
DRAINER = "dlq-drain"

_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


class PatternError(ValueError):
    """A pattern that names nothing: an empty part or a bad escape."""


def unstorable(name: str) -> str:
    """Why the console cannot drain a queue (or vhost) of this name ("" when it can): the
    database's text holds no NUL, and a message is stored under its queue's and vhost's
    names. RabbitMQ accepts such a name; its messages stay in the broker, and the other
    queues are drained."""
    if "\x00" in name:
        return "its name holds a NUL character, which the database cannot store"
    return ""


def is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


@dataclass(frozen=True)
class QueuePattern:
    vhost: str  # a name or a glob, unescaped
    queue: str

    def matches(self, vhost: str, queue: str) -> bool:
        return fnmatch.fnmatchcase(vhost, self.vhost) and fnmatch.fnmatchcase(queue, self.queue)

    def matches_vhost(self, vhost: str) -> bool:
        return fnmatch.fnmatchcase(vhost, self.vhost)

    def __str__(self) -> str:
        return f"{escape_vhost(self.vhost)}/{self.queue}"


def escape_vhost(vhost: str) -> str:
    return vhost.replace("%", "%25").replace("/", "%2F")


def _unescape(text: str, item: str) -> str:
    if _ESCAPE.search(text):
        raise PatternError(f"{item!r}: a % must start an escape such as %2F")
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def parse(item: str, default_vhost: str) -> QueuePattern:
    """One pattern; raises PatternError naming the item."""
    vhost, sep, queue = item.partition("/")
    if not sep:
        vhost, queue = None, item
    if not queue.strip() or (vhost is not None and not vhost.strip()):
        raise PatternError(f"{item!r} has an empty part (write VHOST/QUEUE or QUEUE)")
    if vhost is None:
        return QueuePattern(default_vhost, queue)
    return QueuePattern(_unescape(vhost, item), queue)


def parse_all(items: list[str], default_vhost: str) -> list[QueuePattern]:
    return [parse(item, default_vhost) for item in items]


def matches(patterns: list[QueuePattern], vhost: str, queue: str) -> bool:
    return any(p.matches(vhost, queue) for p in patterns)


def qualified(vhost: str, queue: str) -> str:
    """A queue as a reader meets it: bare in vhost `/`, `vhost/queue` elsewhere."""
    return queue if vhost == "/" else f"{escape_vhost(vhost)}/{queue}"
