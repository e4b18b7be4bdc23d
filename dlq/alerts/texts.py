"""What an alert says: a digest (or a test) as a formats.Alert, with links into the
console's filtered message list (DLQ_CONSOLE_URL; the same filter names as the API)."""

from datetime import datetime
from urllib.parse import urlencode

from django.conf import settings

from dlq.alerts.formats import Alert, Item
from dlq.broker import names
from dlq.models import AlertDigest

TOP = 10  # queues and groups listed in an alert; the rest are counted


def console_url(path: str, **query) -> str:
    url = f"{settings.DLQ_CONSOLE_URL.rstrip('/')}/{path.lstrip('/')}"
    query = {k: v for k, v in query.items() if v}
    return f"{url}?{urlencode(query)}" if query else url


def _split(key: str) -> tuple[str | None, str]:
    """A digest's queue key (patterns.queue_key: `VHOST/QUEUE`, the vhost escaped) as
    (vhost, queue); a key of a digest opened before vhosts (a bare queue) has no vhost."""
    if "/" not in key:
        return None, key
    try:
        pattern = names.parse(key, "/")
    except names.PatternError:
        return None, key
    return pattern.vhost, pattern.queue


def _named(vhost: str | None, queue: str) -> str:
    """A queue as alerts name it: with its vhost unless that is `/` (names.qualified)."""
    return names.qualified(vhost, queue) if vhost is not None and queue else queue


def _queue_item(key: str, count: int) -> Item:
    vhost, queue = _split(key)
    url = console_url("messages", queue=queue, vhost=vhost)
    data = {"queue": queue, "count": count, "url": url, "vhost": vhost}
    return Item(_named(vhost, queue), count, url, data=data)


def _group_item(group: str, info: dict, new: bool) -> Item:
    failure = info["exception_type"] or info["reason"] or f"group {group}"
    # Digests stored before 0.4.0 have no message type; those opened before vhosts, none.
    name = " · ".join(filter(None, [info.get("message_type", ""), failure]))
    vhost = info.get("vhost")
    where = [("in", _named(vhost, info["queue"]))]
    if info["failed_queue"]:  # it died in a queue of the same vhost
        where.append(("died in", _named(vhost, info["failed_queue"])))
    if info.get("held_until"):  # a hold ended: these arrived while it lasted
        until = datetime.fromisoformat(info["held_until"])
        where.append((f"{info['held']} arrived on hold until", f"{until:%Y-%m-%d %H:%M} UTC"))
    url = console_url("messages", queue=info["queue"], vhost=vhost, group=group)
    data = {"group": group, "count": info["count"], "new": new, **info, "url": url}
    data.setdefault("vhost", vhost)
    return Item(name, info["count"], url, where, new, data)


def _title(digest: AlertDigest) -> str:
    title = f"{digest.count} new dead-lettered messages in {len(digest.queues)} queues"
    if not digest.new_groups:
        return title
    return f"New failure group{'s' if len(digest.new_groups) > 1 else ''}: {title}"


def _not_listed(digest: AlertDigest) -> str:
    parts = []
    if len(digest.queues) > TOP:
        parts.append(f"{len(digest.queues) - TOP} more queues")
    more_groups = max(len(digest.groups) - TOP, 0)
    if more_groups or digest.other_groups:
        extra = f" (+{digest.other_groups} messages)" if digest.other_groups else ""
        parts.append(f"{more_groups} more groups{extra}")
    return f" Not listed: {', '.join(parts)}." if parts else ""


def compose(digest: AlertDigest) -> Alert:
    new = set(digest.new_groups)
    queues = sorted(digest.queues.items(), key=lambda kv: (-kv[1], kv[0]))
    # New groups first: they are why an alert went out early.
    groups = sorted(digest.groups.items(), key=lambda kv: (kv[0] not in new, -kv[1]["count"]))
    since, until = digest.first_received_at, digest.last_received_at
    span = f"{since:%Y-%m-%d %H:%M:%S} – {until:%H:%M:%S} UTC"
    return Alert(
        title=_title(digest),
        summary=f"Arrived {span}.{_not_listed(digest)}",
        url=console_url("messages", received_after=since.isoformat()),
        label=digest.rule.name,
        queues=[_queue_item(q, n) for q, n in queues[:TOP]],
        groups=[_group_item(g, info, g in new) for g, info in groups[:TOP]],
        facts={
            "kind": digest.reason or "digest",
            "count": digest.count,
            "since": since.isoformat(),
            "until": until.isoformat(),
            "new_groups": list(digest.new_groups),
            "digest_id": digest.pk,
        },
    )


def check_alert() -> Alert:
    """What `dlq_channel test` and the UI's test button send."""
    return Alert(
        title="Test alert from DLQ Console",
        summary="This channel works: alerts about dead-lettered messages will arrive here.",
        url=console_url(""),
        facts={"kind": "test"},
    )


def policy_alert(summary: str) -> Alert:
    """A redrive policy tripped (dlq/redrive/tripping.py); `summary` names it and the count."""
    return Alert(
        title="A redrive policy tripped",
        summary=f"{summary}. It replays nothing until an admin enables it again.",
        url=console_url("/api/v1/policies"),
        facts={"kind": "policy"},
    )


def drainer_alert(summary: str) -> Alert:
    """A drainer stopped reporting (dlq/drain/heartbeat.py); `summary` names it."""
    return Alert(
        title="A drainer stopped reporting",
        summary=f"{summary}. Messages in its queues are not being stored until it is back.",
        url=console_url(""),
        facts={"kind": "drainer"},
    )
