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
    """The actions of the trail; the labels are what the audit page's filter offers."""

    EDIT = "edit", "Edit a message"
    REPLAY = "replay", "Replay a message"
    DISCARD = "discard", "Discard a message"
    RESTORE = "restore", "Restore a message"
    JOB_CREATE = "job_create", "Start a bulk job"
    JOB_CANCEL = "job_cancel", "Cancel a bulk job"
    JOB_FINISH = "job_finish", "A bulk job finishes"
    JOB_RESUME = "job_resume", "Resume a paused bulk job"
    TOKEN_CREATE = "token_create", "Create an API token"
    TOKEN_REVOKE = "token_revoke", "Revoke an API token"
    MUTE_ADD = "mute_add", "Mute alerts"
    MUTE_REMOVE = "mute_remove", "Remove an alert mute"
    SIGN_IN = "sign_in", "Sign in"
    SIGN_IN_FAILED = "sign_in_failed", "Sign-in failed"
    SIGN_IN_LOCKED = "sign_in_locked", "Sign-in locked out"
    # an IdP or proxy user whose groups map to no role
    SIGN_IN_REFUSED = "sign_in_refused", "Sign-in refused"
    AUDIT_PURGE = "audit_purge", "Purge old audit rows"
    CHANNEL_CHANGE = "channel_change", "Change an alert channel"
    REPLAY_TARGET_CHANGE = "replay_target_change", "Change a replay override"
    USER_CREATE = "user_create", "Create a user"
    USER_DEACTIVATE = "user_deactivate", "Deactivate a user"
    USER_ACTIVATE = "user_activate", "Reactivate a user"
    TOPOLOGY_ACK = "topology_ack", "Acknowledge a topology warning"
    TOPOLOGY_UNACK = "topology_unack", "Withdraw a topology acknowledgement"
    GROUP_UPDATE = "group_update", "Change a failure group"
    EXPORT = "export", "Export messages"
    IMPORT = "import", "Import messages"
    POLICY_CREATE = "policy_create", "Create a redrive policy"
    POLICY_UPDATE = "policy_update", "Change a redrive policy"
    POLICY_DELETE = "policy_delete", "Delete a redrive policy"
    POLICY_TRIP = "policy_trip", "A redrive policy trips"
    CHAT_LINK = "chat_link", "Link a Slack or Telegram user"
    CHAT_UNLINK = "chat_unlink", "Unlink a Slack or Telegram user"
    ALERT_PRESS = "alert_press", "Press an alert's button"


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
    WAITING = "waiting"  # between steps, or holding for consumers: no worker holds it
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"
    ABORTED = "aborted"  # more of its replayed messages came back than max_returns


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
    # Why a running job is not moving, in words (contract.md: "" when it is): waiting for
    # the broker to take nacked messages again (dlq/jobs/running.py), watching a step,
    # holding for consumers, or why it was aborted (dlq/jobs/steps.py).
    status_detail = models.TextField(blank=True, default="")
    # Safe replay (dlq/jobs/steps.py): `canary` messages first, then `ramp` times as many
    # as the step before, each step watched for `watch_seconds`; more than `max_returns`
    # of its messages back aborts it; `require_consumers` gates each step.
    canary = models.IntegerField(null=True, blank=True)
    ramp = models.FloatField(default=2.0)
    watch_seconds = models.IntegerField(default=30)
    max_returns = models.IntegerField(null=True, blank=True)
    require_consumers = models.BooleanField(default=False)
    step = models.IntegerField(default=0)  # 0 before the first
    returned = models.IntegerField(default=0)
    # Messages stored with an id above this may be returns (the highest id at the freeze:
    # a return is stored after the job published it; dlq/jobs/returns.py).
    returns_after = models.BigIntegerField(default=0)
    # A waiting job's next turn: the one task that carries this time takes it (a ticket;
    # dlq/jobs/running.claim_job), and the step being watched ends at watch_until. A waiting
    # job with none is paused: it waits for its operator (running._pause).
    wake_at = models.DateTimeField(null=True, blank=True)
    # The broker error the job last paused on (running._pause): resumed, it goes on past
    # that one (the operator chose to), and pauses again only on another.
    paused_on = models.TextField(blank=True, default="")
    watch_until = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"job {self.pk} ({self.action}, {self.status})"

    @property
    def target(self):
        return json.loads(self.target_json)

    @property
    def outcomes(self) -> dict:
        return json.loads(self.outcomes_json)

    @property
    def paused(self) -> bool:
        """Paused after identical errors: only its operator resumes it (or cancels it)."""
        return self.status == JobStatus.WAITING and self.wake_at is None


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
    # The job's step that published it (set by the claim; null: never published), for the
    # job page's per-step chart (dlq/jobs/steps.py per_step).
    step = models.IntegerField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["job", "state", "id"], name="jobitem_state")]
        constraints = [models.UniqueConstraint(fields=["job", "message"], name="jobitem_unique")]

    def __str__(self):
        return f"item {self.message_id} of job {self.job_id}: {self.state}"
