"""Reading a filtered message list to its end, keyset page by keyset page, as a client does."""

from dlq.messages import queries


def walk(filters: dict, limit: int) -> list[int]:
    """The ids of every page of `filters`, `limit` a page, in the order the pages give them."""
    seen, cursor = [], None
    while True:
        rows, cursor = queries.page(queries.filter_messages(filters), cursor, limit)
        seen += [m.id for m in rows]
        if cursor is None:
            return seen
