"""What operators do to messages: versions, replays, audit rows, bulk jobs."""

import json

from django.db import models


class MessageVersion(models.Model):
    """A message as it was before an edit; the newest version lives on the Message itself."""

    message = models.ForeignKey("dlq.Message", on_delete=models.CASCADE, related_name="versions")
    number = models.IntegerField()
    body = models.BinaryField()
    properties_json = models.TextField()
    headers_json = models.TextField()
    replaced_at = models.DateTimeField()
    replaced_by = models.CharField(max_length=150)
    reason = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "number"], name="version_unique")]

    def __str__(self):
        return f"version {self.number} of message {self.message_id}"


class Outcome(models.TextChoices):
    CONFIRMED = "confirmed"
    UNROUTABLE = "unroutable"
    NACKED = "nacked"
    ERROR = "error"


class Replay(models.Model):
    """One attempt to republish a message, and what the broker said."""

    message = models.ForeignKey("dlq.Message", on_delete=models.CASCADE, related_name="replays")
    replay_id = models.CharField(max_length=32, unique=True)
    exchange = models.CharField(max_length=255)
    routing_key = models.CharField(max_length=255)
    target = models.CharField(max_length=16)  # original | failed_queue | custom
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True, default="")
    detail = models.TextField(blank=True, default="")
    actor_name = models.CharField(max_length=150)
    job = models.ForeignKey("dlq.Job", null=True, blank=True, on_delete=models.SET_NULL)
    started_at = models.DateTimeField()
    settled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"replay {self.replay_id} of message {self.message_id}: {self.outcome or 'pending'}"


class ReplayOverride(models.Model):
    """Where "original" goes for a source queue whose first death is not the real origin
    (a delay exchange of a retry framework, for example)."""

    queue_pattern = models.CharField(max_length=255, unique=True)
    exchange = models.CharField(max_length=255, blank=True, default="")
    routing_key = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.queue_pattern} -> {self.exchange or '(default)'}/{self.routing_key}"


class AuditAction(models.TextChoices):
    EDIT = "edit"
    REPLAY = "replay"
    DISCARD = "discard"
    RESTORE = "restore"
    JOB_CREATE = "job_create"
    JOB_CANCEL = "job_cancel"
    TOKEN_CREATE = "token_create"
    TOKEN_REVOKE = "token_revoke"
    MUTE_ADD = "mute_add"
    MUTE_REMOVE = "mute_remove"
    SIGN_IN = "sign_in"
    SIGN_IN_FAILED = "sign_in_failed"
    SIGN_IN_LOCKED = "sign_in_locked"
    SIGN_IN_REFUSED = "sign_in_refused"  # an IdP or proxy user whose groups map to no role
    AUDIT_PURGE = "audit_purge"
    CHANNEL_CHANGE = "channel_change"
    REPLAY_TARGET_CHANGE = "replay_target_change"


class AuditEntry(models.Model):
    """An operator action. Append-only: the database refuses UPDATE and DELETE (a trigger).

    The actor is kept as id and name rather than a foreign key, so deleting a user never
    needs to touch (or cascade into) the audit trail.
    """

    at = models.DateTimeField(db_index=True)
    actor_id = models.BigIntegerField(null=True, blank=True)
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    message_ids_json = models.TextField(default="[]")
    job_id = models.BigIntegerField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    diff_json = models.TextField(blank=True, default="")
    detail = models.TextField(blank=True, default="")
    request_id = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["actor_name", "-id"], name="audit_actor")]

    def __str__(self):
        return f"{self.actor_name} {self.action} at {self.at:%Y-%m-%d %H:%M:%S}"

    @property
    def message_ids(self) -> list[int]:
        return json.loads(self.message_ids_json)

    @property
    def diff(self):
        return json.loads(self.diff_json) if self.diff_json else None


class JobStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


class Job(models.Model):
    """A bulk replay or discard over a selection frozen when the job was created."""

    action = models.CharField(max_length=16)  # replay | discard
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    target_json = models.TextField(default='"original"')
    rate_per_s = models.IntegerField(null=True, blank=True)
    reason = models.TextField()
    filter_json = models.TextField(blank=True, default="")
    created_by = models.CharField(max_length=150)
    created_by_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    total = models.IntegerField(default=0)
    done = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    outcomes_json = models.TextField(default="{}")
    error = models.TextField(blank=True, default="")

    def __str__(self):
        return f"job {self.pk} ({self.action}, {self.status})"

    @property
    def target(self):
        return json.loads(self.target_json)

    @property
    def outcomes(self) -> dict:
        return json.loads(self.outcomes_json)


class ItemState(models.TextChoices):
    PENDING = "pending"
    PUBLISHING = "publishing"  # handed to the broker; its confirm not yet recorded
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"


class JobItem(models.Model):
    """One message of a job: the outbox row that makes a job resumable after a crash."""

    # No index of its own: jobitem_state and jobitem_unique both begin with job_id.
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="items", db_index=False)
    message = models.ForeignKey("dlq.Message", on_delete=models.CASCADE)
    state = models.CharField(max_length=16, choices=ItemState.choices, default=ItemState.PENDING)
    outcome = models.CharField(max_length=16, blank=True, default="")
    replay_id = models.CharField(max_length=32, blank=True, default="")
    # Why it failed: the broker's answer, or why it could not be published at all.
    detail = models.TextField(blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["job", "state", "id"], name="jobitem_state")]
        constraints = [models.UniqueConstraint(fields=["job", "message"], name="jobitem_unique")]

    def __str__(self):
        return f"item {self.message_id} of job {self.job_id}: {self.state}"
