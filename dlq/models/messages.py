"""Stored messages, the drain's pending batches, and the queues it drains."""

import json

from django.db import models


class Status(models.TextChoices):
    PARKED = "parked"
    REPLAYING = "replaying"
    REPLAYED = "replayed"
    DISCARDED = "discarded"


class Message(models.Model):
    """One message the console holds, byte for byte, with what was derived from it.

    `properties_json` and `headers_json` are JSON *text*, not jsonb: text keeps the
    table order, and escapes such as \\u0000 that PostgreSQL's jsonb refuses.
    """

    queue = models.CharField(max_length=255)
    vhost = models.CharField(max_length=255, default="/")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PARKED)
    received_at = models.DateTimeField()

    body = models.BinaryField()
    size = models.IntegerField()
    properties_json = models.TextField(default="{}")
    headers_json = models.TextField(default="{}")

    message_id = models.CharField(max_length=255, blank=True, default="")
    correlation_id = models.CharField(max_length=255, blank=True, default="")
    content_type = models.CharField(max_length=255, blank=True, default="")
    content_encoding = models.CharField(max_length=255, blank=True, default="")
    exchange = models.CharField(max_length=255, blank=True, default="")
    routing_key = models.CharField(max_length=255, blank=True, default="")

    # Where a replay to "original" goes: first death's exchange and its routing keys.
    original_exchange = models.CharField(max_length=255, null=True, blank=True)
    original_routing_keys_json = models.TextField(default="[]")
    original_routing_key = models.CharField(max_length=255, blank=True, default="")
    failed_queue = models.CharField(max_length=255, blank=True, default="")
    death_reason = models.CharField(max_length=32, blank=True, default="")
    death_count = models.IntegerField(default=0)
    delivery_count = models.IntegerField(null=True, blank=True)
    first_death_at = models.DateTimeField(null=True, blank=True)

    exception_type = models.CharField(max_length=255, blank=True, default="")
    exception_message = models.TextField(blank=True, default="")
    exception_stacktrace = models.TextField(blank=True, default="")
    message_type = models.CharField(max_length=255, blank=True, default="")
    group = models.CharField(max_length=16, default="")
    # The trace it belongs to (dlq/messages/traces.py): lower-hex, 16 or 32 digits, or "".
    trace_id = models.CharField(max_length=32, blank=True, default="")

    replay_count = models.IntegerField(default=0)
    # Lineage: a replayed message that dies again is a new row pointing at its earlier life.
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    lineage_id = models.BigIntegerField(null=True, blank=True)

    # Idempotency (see dlq/drain/store.py): content hash, and the pending batch that stored it.
    fingerprint = models.CharField(max_length=64)
    drain_batch = models.CharField(max_length=32, null=True, blank=True)

    search_text = models.TextField(blank=True, default="")
    drain_note = models.TextField(blank=True, default="")

    class Meta:
        # No index on search_text: every index entry costs the drainer, and a trigram one
        # most of all. The search reads SearchEntry, filled behind it (dlq/messages/search.py).
        indexes = [
            models.Index(fields=["queue", "-id"], name="msg_queue_id"),
            models.Index(fields=["status", "-id"], name="msg_status_id"),
            models.Index(fields=["group", "-id"], name="msg_group_id"),
            # Partial: a message no framework names costs the drainer no entry here.
            models.Index(
                fields=["message_type", "-id"],
                name="msg_type_id",
                condition=~models.Q(message_type=""),
            ),
            # Partial, as msg_type_id: most messages carry no trace.
            models.Index(
                fields=["trace_id", "-id"],
                name="msg_trace_id",
                condition=~models.Q(trace_id=""),
            ),
            # With id: a time range's ids come from the index alone (queries.page).
            models.Index(fields=["received_at", "id"], name="msg_received"),
            # The queue overview counts from this index alone (an index-only scan).
            models.Index(fields=["vhost", "queue", "status", "received_at"], name="msg_overview"),
            models.Index(fields=["fingerprint"], name="msg_fingerprint"),
            # Partial: most messages never come back, and every index entry costs the drain.
            models.Index(
                fields=["lineage_id"],
                name="msg_lineage",
                condition=models.Q(lineage_id__isnull=False),
            ),
            # Returns to a job: stored since an id, with their earlier life (dlq/jobs/returns.py).
            # Partial for the same reason.
            models.Index(
                fields=["id", "previous"],
                name="msg_returned",
                condition=models.Q(previous__isnull=False),
            ),
        ]

    def __str__(self):
        return f"message {self.pk} in {self.queue}"

    @property
    def properties(self) -> dict:
        return json.loads(self.properties_json)

    @property
    def headers(self) -> dict:
        return json.loads(self.headers_json)

    @property
    def original_routing_keys(self) -> list[str]:
        return json.loads(self.original_routing_keys_json)

    @property
    def root_id(self) -> int:
        return self.lineage_id or self.pk


class PendingBatch(models.Model):
    """A drain batch that is committed but whose ack the broker may not have received.

    Rows live only between a batch's commit and the ack that follows it; one left behind by
    a crash lets the redelivered copies of its messages be recognised (dlq/drain/store.py).
    """

    id = models.CharField(max_length=32, primary_key=True)
    drainer = models.CharField(max_length=255)
    created_at = models.DateTimeField()

    def __str__(self):
        return f"pending batch {self.id}"


class QueueTally(models.Model):
    """A change to one queue's stored and parked counts. On PostgreSQL, triggers on the
    message table write one per statement and queue (migration 0021), in the writing
    transaction, so the sum of a queue's rows is its exact count; dlq/messages/tallies.py
    reads them and now and then folds them into one row per queue."""

    vhost = models.CharField(max_length=255)
    queue = models.CharField(max_length=255)
    stored = models.BigIntegerField()
    parked = models.BigIntegerField()
    last_received_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [models.Index(fields=["vhost", "queue"], name="queuetally_queue")]


class DrainedQueue(models.Model):
    """A queue the drainer has matched, with what the overview needs to know about it."""

    vhost = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    queue_type = models.CharField(max_length=32, blank=True, default="")
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    last_arrival_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["vhost", "name"], name="drainedqueue_unique")
        ]

    def __str__(self):
        return self.name
