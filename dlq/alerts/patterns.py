"""The queues an alert rule or a mute names: `QUEUE` (in the default vhost) or `VHOST/QUEUE`,
either part a glob, with DLQ_QUEUES's syntax and meaning (dlq/broker/names.py parses them
all), and the `VHOST/QUEUE` key a digest counts a queue by."""

import logging

from django.conf import settings

from dlq.broker import amqp, names

log = logging.getLogger("dlq.alerts")


def default_vhost() -> str:
    """The vhost a bare QUEUE pattern names: DLQ_BROKER_URL's, as in DLQ_QUEUES."""
    return amqp.vhost_of(settings.DLQ_BROKER_URL)


def queue_key(vhost: str, queue: str) -> str:
    """A digest's key for a queue: `VHOST/QUEUE` with the vhost escaped, so the first slash
    always ends the vhost (texts.py splits it again for names and links)."""
    return f"{names.escape_vhost(vhost)}/{queue}"


def patterns_of(items: list[str], default: str | None = None) -> list[names.QueuePattern]:
    """A rule's or a mute's `QUEUE` / `VHOST/QUEUE` globs; a bare QUEUE is in the default
    vhost. A pattern saved before the forms knew vhosts that now reads as junk (an empty
    part, a bad % escape) takes nothing, and says so in the log."""
    default = default or default_vhost()
    parsed = []
    for item in items:
        try:
            parsed.append(names.parse(item, default))
        except names.PatternError:
            if item not in _ignored:  # once a process, not once a rule an evaluation
                _ignored.add(item)
                log.warning("alert pattern ignored", extra={"pattern": item})
    return parsed


_ignored: set[str] = set()  # patterns saved rows hold: few, and fixed only by an admin


def pattern_errors(items: list[str]) -> list[str]:
    """What is wrong with each `QUEUE` / `VHOST/QUEUE` glob a rule or a mute is given."""
    found = []
    for item in items:
        try:
            names.parse(item, "/")  # the syntax alone: any default vhost will do
        except names.PatternError as e:
            found.append(f"{e}; a / inside a vhost name is written %2F")
    return found


def matches(patterns: list[str], vhost: str, queue: str) -> bool:
    return names.matches(patterns_of(patterns), vhost, queue)
