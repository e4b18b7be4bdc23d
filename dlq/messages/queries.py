"""Reading stored messages for the API and the pages: filters, keyset pages, queues, history."""

import base64
import binascii

from django.db.models import Exists, F, Max, Min, OuterRef, Q, Value

from dlq.messages import search
from dlq.messages.history import history
from dlq.messages.ingest import fold
from dlq.models import DrainedQueue, Message, SearchEntry

MAX_LIMIT = 500
# A search or a time range first scans this many ids in id order (see page()).
PAGE_WINDOW = 5_000
MISJUDGED_COLUMNS = {"search_text", "received_at"}
EXPORT_CHUNK = 500  # whole rows an export holds at once (chunks())
# Columns the list does not show; the detail reads the whole row.
LIST_DEFERRED = ("body", "properties_json", "headers_json", "exception_stacktrace", "search_text")
EXACT_FILTERS = {
    "queue": "queue",
    "status": "status",
    "reason": "death_reason",
    "exception_type": "exception_type",
    "message_type": "message_type",
    "vhost": "vhost",
    "group": "group",
    "trace_id": "trace_id",
}


def encode_cursor(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"m{last_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int | None:
    """The id a cursor stands for, or None when it is not one this API gave out."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        return None
    digits = raw[1:]
    if raw[:1] != "m" or not digits.isdigit() or not 0 < int(digits) < 2**63:
        return None
    return int(digits)


def filter_messages(filters: dict):
    """Messages matching the list's filters (keys as in schemas.MessageFilter), newest first."""
    qs = Message.objects.order_by("-id")
    for key, column in EXACT_FILTERS.items():
        if filters.get(key) is not None:
            qs = qs.filter(**{column: filters[key]})
    if filters.get("exchange") is not None:
        value = filters["exchange"]
        qs = qs.filter(Q(exchange=value) | Q(original_exchange=value))
    if filters.get("routing_key") is not None:
        value = filters["routing_key"]
        qs = qs.filter(Q(routing_key=value) | Q(original_routing_key=value))
    if filters.get("received_after") is not None:
        qs = qs.filter(received_at__gte=filters["received_after"])
    if filters.get("received_before") is not None:
        qs = qs.filter(received_at__lt=filters["received_before"])
    if filters.get("q"):
        # The term rides along (an alias is never selected) for page() to bound the search.
        term = filters["q"]
        qs = qs.alias(search_term=Value(term)).filter(id__in=text_search(term))
    return qs


def text_search(term: str, low: int | None = None, high: int | None = None):
    """The ids (from `low` up to below `high`, when given) of messages whose search text
    holds `term` (any case, literally): their entries in the trigram index, and the
    messages above the indexer's watermark, read by id range. Exact whatever the indexer's
    lag (search.py). Above the watermark the texts are stored folded (ingest.fold), so a
    plain LIKE reads them; the entries keep the UPPER(...) LIKE of their trigram index
    (_in_entry)."""
    indexed = SearchEntry.objects.filter(_in_entry(term))
    newer = Message.objects.filter(id__gt=search.indexed_upto(), search_text__contains=fold(term))
    if low is not None:
        indexed, newer = indexed.filter(message_id__gte=low), newer.filter(id__gte=low)
    if high is not None:
        indexed, newer = indexed.filter(message_id__lt=high), newer.filter(id__lt=high)
    return indexed.values("message_id").union(newer.values("id"), all=True)


def _in_entry(term: str) -> Q:
    """An entry holding `term`, any case. Entries copied since 0.9.0 hold folded texts, and
    the folded term is found in an entry wherever it is found in its message before the
    indexer reached it (UPPER changes character by character, so it keeps what the folded
    texts hold); entries copied before hold texts as they came, compared as then. A term
    that folding changes is compared both ways, ASCII ones too: UPPER follows the database's
    locale, and a Turkish one makes `id` upper `İD`, which `ID` as typed is not found in.
    Both arms read the trigram index on UPPER(text)."""
    as_typed = Q(text__icontains=term)
    folded = fold(term)
    if folded == term:
        return as_typed
    return as_typed | Q(text__icontains=folded)


def page(qs, cursor: str | None, limit: int) -> tuple[list[Message], str | None]:
    """One keyset page of messages (without the columns the list does not show).

    The planner finds a newest-first page well for the exact-match filters (their indexes
    end in id, and its estimates of them are good), but not for a text search, whose
    frequency it cannot estimate, nor for a received_at range, whose rows it assumes spread
    evenly over the ids: either may walk the id index through most of a million rows. Those
    two take two steps: the newest PAGE_WINDOW ids below the cursor in id order, where a page
    of a busy list is found at once; and only when they hold less than a page, the matches
    below them, collected with the filters' best index (the id order hidden from the
    planner), newest first. A text search is bounded to each step's ids: unbounded, the
    planner collects every match of a common term first. A cursor that decode_cursor
    refuses is a ValueError.
    """
    qs = qs.defer(*LIST_DEFERRED)
    if not _filters_on(qs.query.where, MISJUDGED_COLUMNS):
        return keyset(qs, cursor, limit)
    top = decode_cursor(cursor) if cursor else _next_id()
    if top is None:
        raise ValueError("not a cursor this API gave out")
    floor = max(top - PAGE_WINDOW, 1)
    qs, term = _search_apart(qs.filter(id__lt=top))
    window = qs.filter(id__gte=floor)
    if term is not None:
        window = window.filter(id__in=text_search(term, floor, top))
    rows = list(window[: limit + 1])
    if len(rows) <= limit and floor > 1:
        below = qs.filter(id__lt=floor)
        parts = [below] if term is None else _searched_apart(below, term)
        rows += _newest_below(parts, limit + 1 - len(rows))
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1].id)


def _filters_on(where, columns: set[str]) -> bool:
    """Whether a query's WHERE (nested AND/OR included) tests any of `columns`."""
    for child in where.children:
        if hasattr(child, "children"):
            if _filters_on(child, columns):
                return True
        elif _column(child) in columns:
            return True
    return False


def _column(lookup) -> str | None:
    """The column a lookup tests; a text_search() tests search_text."""
    if getattr(getattr(lookup, "rhs", None), "model", None) is SearchEntry:
        return "search_text"
    return getattr(getattr(lookup.lhs, "target", None), "column", None)


def _search_apart(qs):
    """`qs` without its text_search() (a top-level AND condition), and the term."""
    alias = qs.query.annotations.get("search_term")
    if alias is None:
        return qs, None
    qs = qs.all()  # a clone: its WHERE's list of children is its own
    where = qs.query.where
    # Nested nodes are the OR of a filter like `exchange` (delivered or original): never the
    # search, which filter_messages adds as a condition of its own.
    where.children = [
        child
        for child in where.children
        if hasattr(child, "children") or _column(child) != "search_text"
    ]
    return qs, alias.value


def _next_id() -> int:
    newest = Message.objects.order_by("-id").values_list("id", flat=True).first()
    return (newest or 0) + 1


def _searched_apart(qs, term: str) -> list:
    """`qs` searched for `term` as two querysets, the indexed messages and the newer ones,
    each a plain semi-join the planner can drive from the other filters' index (probing
    the entries by id) or from the trigram index, whichever finds fewer rows."""
    upto = search.indexed_upto()
    entry = SearchEntry.objects.filter(_in_entry(term), message_id=OuterRef("id"))
    return [
        qs.filter(id__lte=upto).filter(Exists(entry)),
        qs.filter(id__gt=upto, search_text__contains=fold(term)),
    ]


def _newest_below(parts: list, count: int) -> list[Message]:
    """The `count` newest rows of the querysets in `parts`, whatever their density."""
    ids = []
    for qs in parts:
        below = qs.annotate(unordered_id=F("id") + 0)
        ids += below.order_by("-unordered_id").values_list("id", flat=True)[:count]
    ids = sorted(ids, reverse=True)[:count]
    # By id alone: they match, and filtering again would run the search again.
    listed = Message.objects.order_by("-id").defer(*LIST_DEFERRED)
    return list(listed.filter(id__in=ids)) if ids else []


def keyset(qs, cursor: str | None, limit: int) -> tuple[list, str | None]:
    """One keyset page of a newest-first queryset (ids below the cursor's) and the cursor of
    the next, if any."""
    if cursor:
        top = decode_cursor(cursor)
        if top is None:
            raise ValueError("not a cursor this API gave out")  # callers validate it first
        qs = qs.filter(id__lt=top)
    rows = list(qs[: limit + 1])
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1].id)


def chunks(qs, size: int = EXPORT_CHUNK):
    """Every message of a newest-first queryset (filter_messages), whole rows, `size` at a
    time, keyset by id: an export never holds more than one chunk. Pages as the list finds
    them (page(): a search or a time range in two steps), then their rows in full."""
    misjudged = _filters_on(qs.query.where, MISJUDGED_COLUMNS)
    cursor = None
    while True:
        if misjudged:
            found, cursor = page(qs, cursor, size)
            rows = list(Message.objects.filter(id__in=[m.id for m in found]).order_by("-id"))
        else:
            rows, cursor = keyset(qs, cursor, size)
        if rows:
            yield rows
        if cursor is None:
            return


def known_vhosts() -> list[str]:
    """The vhosts the console has drained or stores messages of, sorted: every drained
    queue's (a small table) and the lowest and highest stored (two probes of msg_overview,
    which leads with vhost), never a scan of the messages. Enough to tell one vhost from
    several; a vhost whose queues are gone and whose messages sort between two others is
    left out, and the filter still takes it typed."""
    vhosts = set(DrainedQueue.objects.order_by().values_list("vhost", flat=True).distinct())
    ends = Message.objects.aggregate(low=Min("vhost"), high=Max("vhost"))
    vhosts.update(v for v in ends.values() if v is not None)
    return sorted(vhosts)


def detail(message_id: int) -> Message | None:
    """One message with its `history` attached, or None."""
    message = Message.objects.filter(pk=message_id).first()
    if message is not None:
        message.history = history(message)
    return message


# --- the audit trail ----------------------------------------------------------------------
