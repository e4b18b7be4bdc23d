"""The text search's own tables, filled behind the drainer (dlq/messages/search.py)."""

from django.db import models


class SearchEntry(models.Model):
    """A message's search text, copied here by the indexer so that the drainer's inserts
    into dlq_message pay no trigram index. On PostgreSQL the trigram index,
    search_entry_trgm (GIN on UPPER(text), what icontains compares), is made by migration
    0014 only, as SQLite has no such index."""

    # CASCADE: retention's purge deletes entries by message id in the same statement batch
    # (the collector's fast delete: one DELETE ... WHERE message_id IN, no rows loaded).
    message = models.OneToOneField(
        "dlq.Message", primary_key=True, on_delete=models.CASCADE, related_name="search_entry"
    )
    text = models.TextField()

    def __str__(self):
        return f"search entry of message {self.message_id}"


class SearchWatermark(models.Model):
    """The indexer's progress, one row: every message up to `upto` has its entry.

    `seen_upto` and `holders` are the last pass's look at the id sequence: the highest
    committed id, and the transactions that had taken ids and were still open. Once they
    have all ended, no message at or below `seen_upto` can still appear, and `upto` may
    move there (dlq/messages/search.py explains why)."""

    upto = models.BigIntegerField(default=0)
    seen_upto = models.BigIntegerField(null=True, blank=True)
    holders = models.JSONField(default=list)

    def __str__(self):
        return f"search indexed up to {self.upto}"
