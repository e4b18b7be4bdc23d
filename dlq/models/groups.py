"""Failure groups as a worklist: who is on a group (its triage), and its counts kept by
triggers (GroupTally) so the worklist never counts a million messages per request."""

from django.conf import settings
from django.db import models


class GroupTriage(models.Model):
    """What operators said about a failure group: owner, note, ticket, hold. Its state is
    never stored: it is derived from these and the group's parked count (dlq/groups/).

    `held_from`/`held_to` are the alert engine's: the span of the current hold whose
    arrivals are kept out of digests until the hold ends and a digest names them; both are
    cleared once it has (dlq/alerts/engine.py)."""

    group = models.CharField(max_length=16, primary_key=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    owned_at = models.DateTimeField(null=True, blank=True)  # when the owner was last set
    note = models.TextField(blank=True, default="")
    ticket_url = models.CharField(max_length=2000, blank=True, default="")
    hold_until = models.DateTimeField(null=True, blank=True)
    held_from = models.DateTimeField(null=True, blank=True)
    held_to = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # Partial: the engine's few pending holds, read on every evaluation pass.
            models.Index(
                fields=["held_from"],
                name="grouptriage_held",
                condition=models.Q(held_from__isnull=False),
            )
        ]

    def __str__(self):
        return f"triage of group {self.group}"


class GroupTally(models.Model):
    """A change to one group's counts in one queue. On PostgreSQL, triggers on the message
    table write one per statement, group and queue (migration 0031), in the writing
    transaction, as QueueTally's do; dlq/groups/worklist.py sums and folds them."""

    group = models.CharField(max_length=16)
    vhost = models.CharField(max_length=255)
    queue = models.CharField(max_length=255)
    stored = models.BigIntegerField()
    parked = models.BigIntegerField()
    first_received_at = models.DateTimeField(null=True)
    last_received_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [models.Index(fields=["group"], name="grouptally_group")]
