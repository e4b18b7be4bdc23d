"""Every failure group as a worklist row: its name, parked count, queues, first and last
arrival, and its state, derived at read time from the counts and the triage (never stored,
so never stale).

On PostgreSQL the counts come from the group tallies that triggers write in every writing
transaction (migration 0031): a read sums a few rows per group instead of grouping the
message table, and `fold` (beat) keeps them a few. Other databases group the messages.
"""

from datetime import datetime

from django.db import connection
from django.db.models import Min
from django.utils import timezone

from dlq.messages.groups import NAME_FIELDS, first_line, group_name
from dlq.models import GroupTally, GroupTriage, Message, Status
from dlq.models.redrive import PolicyState, RedriveDue, RedrivePolicy

STATES = ("new", "investigating", "on_hold", "resolved")
MAX_LIMIT = 500
TALLY = GroupTally._meta.db_table
TRIAGE = GroupTriage._meta.db_table

# Per group and queue: what it holds, parked, and its first and last arrival.
_TALLIED = f"""SELECT "group", vhost, queue, sum(stored) AS stored, sum(parked) AS parked,
    min(first_received_at) AS first_at, max(last_received_at) AS last_at
    FROM {TALLY} {{where}} GROUP BY "group", vhost, queue HAVING sum(stored) > 0"""
_COUNTED = f"""SELECT "group", vhost, queue, count(*) AS stored,
    sum(CASE WHEN status = '{Status.PARKED}' THEN 1 ELSE 0 END) AS parked,
    min(received_at) AS first_at, max(received_at) AS last_at
    FROM {Message._meta.db_table} {{where}} GROUP BY "group", vhost, queue"""
# The state as the contract derives it; %(now)s decides whether a hold still holds.
_STATE = """CASE WHEN g.parked = 0 THEN 'resolved'
    WHEN t.hold_until > %(now)s THEN 'on_hold'
    WHEN t.owner_id IS NOT NULL THEN 'investigating' ELSE 'new' END"""
# The list reads the tally rows as they are (summed once, by group); elsewhere they are
# summed per group and queue first. MATERIALIZED: summed once, whatever the plan's guess.
_ROWS = f"""SELECT "group", vhost, queue, stored, parked, first_received_at AS first_at,
    last_received_at AS last_at FROM {TALLY}"""
_IN_QUEUE = """WHERE "group" IN (SELECT "group" FROM q WHERE {match} GROUP BY "group"
    HAVING sum(stored) > 0)"""
_LIST = f"""WITH q AS ({{rows}}),
    g AS MATERIALIZED (SELECT "group", sum(parked) AS parked, min(first_at) AS first_at,
          max(last_at) AS last_at FROM q {{in_queue}} GROUP BY "group"
          HAVING sum(stored) > 0),
    s AS (SELECT g."group", g.parked, g.first_at, g.last_at, t.owner_id, {_STATE} AS state
          FROM g LEFT JOIN {TRIAGE} t ON t."group" = g."group")
    SELECT "group", parked, first_at, last_at, state, count(*) OVER () FROM s {{where}}
    ORDER BY parked DESC, "group" LIMIT %(limit)s OFFSET %(offset)s"""
# FOLD: one statement, so the rows it deletes are the ones it sums (tallies.FOLD_SQL).
FOLD_SQL = f"""WITH gone AS (DELETE FROM {TALLY} RETURNING "group", vhost, queue, stored,
    parked, first_received_at, last_received_at)
    INSERT INTO {TALLY} ("group", vhost, queue, stored, parked, first_received_at,
        last_received_at)
    SELECT "group", vhost, queue, sum(stored), sum(parked), min(first_received_at),
        max(last_received_at) FROM gone GROUP BY "group", vhost, queue HAVING sum(stored) <> 0"""


def _per_queue(groups: list[str] | None = None) -> tuple[str, dict]:
    """The per group and queue rows' SQL, for every group or these, and its parameters."""
    postgres = connection.vendor == "postgresql"
    where, params = ([] if postgres else ["\"group\" <> ''"]), {}
    if groups is not None:
        params = {f"g{i}": group for i, group in enumerate(groups)}
        where.append(f'"group" IN ({", ".join(f"%({k})s" for k in params)})')
    sql = _TALLIED if postgres else _COUNTED
    return sql.format(where=f"WHERE {' AND '.join(where)}" if where else ""), params


def listed(
    vhost: str = "",
    queue: str = "",
    state: str = "",
    owner_id: int | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[dict], int]:
    """A page of groups, most parked first, and how many match. `vhost`/`queue`: groups
    with messages there; `owner_id` a user's groups."""
    rows_sql, params = _per_queue() if connection.vendor != "postgresql" else (_ROWS, {})
    in_queue = []
    if vhost:
        in_queue.append("vhost = %(vhost)s")
    if queue:
        in_queue.append("queue = %(queue)s")
    where = []
    if state:
        where.append("state = %(state)s")
    if owner_id is not None:
        where.append("owner_id = %(owner)s")
    sql = _LIST.format(
        rows=rows_sql,
        in_queue=_IN_QUEUE.format(match=" AND ".join(in_queue)) if in_queue else "",
        where=f"WHERE {' AND '.join(where)}" if where else "",
    )
    params |= {"vhost": vhost, "queue": queue, "state": state, "owner": owner_id,
               "now": timezone.now(), "limit": limit, "offset": offset}  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows and offset:  # past the last page: how many there are, all the same
        return [], listed(vhost, queue, state, owner_id, 1, 0)[1]
    total = rows[0][5] if rows else 0
    groups = [{"id": g, "parked": int(p), "first_seen": f, "last_seen": last, "state": s}
              for g, p, f, last, s, _ in rows]  # fmt: skip
    _attach(groups)
    return groups, total


def one(group: str) -> dict | None:
    """One group as the worklist shows it; None when none of its messages is stored."""
    per_queue, params = _per_queue([group])
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT sum(parked), min(first_at), max(last_at) FROM ({per_queue}) AS q",
            params,
        )
        parked, first, last = cursor.fetchone()
    if parked is None:
        return None
    row = {"id": group, "parked": int(parked), "first_seen": first, "last_seen": last}
    _attach([row])
    row["state"] = state_of(row["parked"], row["triage"], timezone.now())
    return row


def parked(groups: list[str]) -> dict[str, int]:
    """How many messages of each of these groups are parked (a group with none stored: 0)."""
    if not groups:
        return {}
    per_queue, params = _per_queue(list(groups))
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "group", sum(parked) FROM ({per_queue}) AS q GROUP BY "group"',
                       params)  # fmt: skip
        counts = {group: int(n or 0) for group, n in cursor.fetchall()}
    return {group: counts.get(group, 0) for group in groups}


def state_of(parked: int, triage: GroupTriage | None, now: datetime) -> str:
    """The same derivation as the list's SQL (_STATE), for one group in Python."""
    if parked == 0:
        return "resolved"
    if triage and triage.hold_until and triage.hold_until > now:
        return "on_hold"
    return "investigating" if triage and triage.owner_id else "new"


def _attach(rows: list[dict]) -> None:
    """Each group's queues, its name from its newest message, and its triage."""
    ids = [r["id"] for r in rows]
    if not ids:
        return
    queues: dict[str, list] = {}
    per_queue, params = _per_queue(ids)
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "group", vhost, queue FROM ({per_queue}) AS q', params)
        for group, vhost, queue in cursor.fetchall():
            queues.setdefault(group, []).append({"vhost": vhost, "queue": queue})
    triages = GroupTriage.objects.filter(group__in=ids).select_related("owner")
    triages = {t.group: t for t in triages}
    newest = _newest(ids)
    policies = _policies(ids)
    for row in rows:
        row["queues"] = sorted(queues.get(row["id"], []), key=lambda q: (q["vhost"], q["queue"]))
        row["triage"] = triage = triages.get(row["id"])
        row["owner"] = triage.owner.get_username() if triage and triage.owner else None
        row["note"] = triage.note if triage else ""
        row["ticket_url"] = triage.ticket_url if triage else ""
        row["hold_until"] = triage.hold_until if triage else None
        row["policy"] = policies.get(row["id"])
        row.update(_named(row["id"], newest.get(row["id"])))


def _policies(groups: list[str]) -> dict[str, int]:
    """The redrive policy that applies to each group (dlq/redrive/): the one holding the
    group's parked messages, or else the first active one that names the group. One read
    for the page: the due rows are few, a group's messages may be a million."""
    active = list(RedrivePolicy.objects.filter(state=PolicyState.ACTIVE, enabled=True)
                  .order_by("id").values_list("id", "match"))  # fmt: skip
    if not active:
        return {}
    named = {}
    for policy_id, match in active:
        group = (match or {}).get("group") if isinstance(match, dict) else None
        if group in groups:
            named.setdefault(group, policy_id)
    held = (RedriveDue.objects.filter(policy_id__in=[p for p, _ in active],
                                      message__group__in=groups, message__status=Status.PARKED)
            .values("message__group").annotate(first=Min("policy_id")).order_by())  # fmt: skip
    return named | {row["message__group"]: row["first"] for row in held}


_EMPTY = {"message_type": "", "exception_type": "", "exception_message": ""}
# The newest message of each group, one index probe each (msg_group_id).
_NEWEST = f"""SELECT m.* FROM unnest(%s::varchar[]) AS g(id) CROSS JOIN LATERAL (
    SELECT id, "group", {", ".join(NAME_FIELDS)} FROM {Message._meta.db_table}
    WHERE "group" = g.id ORDER BY id DESC LIMIT 1) AS m"""


def _newest(groups: list[str]) -> dict[str, Message]:
    if connection.vendor == "postgresql":
        return {m.group: m for m in Message.objects.raw(_NEWEST, [groups])}
    newest = (Message.objects.filter(group=g).order_by("-id").only("group", *NAME_FIELDS).first()
              for g in groups)  # fmt: skip
    return {m.group: m for m in newest if m is not None}


def _named(group: str, newest: Message | None) -> dict:
    """The name and what it is made of; the id only while nothing of it is stored."""
    if newest is None:
        return {"name": group, **_EMPTY}
    return {
        "name": group_name(newest),
        "message_type": newest.message_type,
        "exception_type": newest.exception_type,
        "exception_message": first_line(newest.exception_message),
    }


def fold() -> int:
    """Sum the tally rows into one per group and queue; how many such pairs hold messages."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute(FOLD_SQL)
        return max(cursor.rowcount, 0)
