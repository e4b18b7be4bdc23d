"""Standing redrive policies and the index of what they will replay when (dlq/redrive/)."""

from django.db import models


class PolicyState(models.TextChoices):
    ACTIVE = "active"
    TRIPPED = "tripped"
    DISABLED = "disabled"


class PolicyTarget(models.TextChoices):
    ORIGINAL = "original"
    FAILED_QUEUE = "failed_queue"


# A policy's match keys, and the message field each compares exactly.
MATCH_FIELDS = {"vhost": "vhost", "queue": "queue", "group": "group",
                "message_type": "message_type", "exception_type": "exception_type",
                "reason": "death_reason"}  # fmt: skip


class RedrivePolicy(models.Model):
    """Replay the parked messages it matches by itself, with a delay, a backoff and a cap.

    `match`: exact values of any of vhost, queue, group, message_type, exception_type,
    reason (the death reason). `armed_at`: since when returns count towards tripping (its
    creation, or the PUT that re-armed it)."""

    name = models.CharField(max_length=150, unique=True)
    enabled = models.BooleanField(default=True)
    match = models.JSONField(default=dict)
    target = models.CharField(max_length=16, choices=PolicyTarget.choices)
    delay_seconds = models.IntegerField()
    backoff = models.FloatField(default=2.0)
    max_attempts = models.IntegerField()
    rate_per_s = models.FloatField(null=True, blank=True)
    require_consumers = models.BooleanField(default=True)
    trip_returns = models.IntegerField(default=10)
    trip_window_seconds = models.IntegerField(default=300)
    state = models.CharField(max_length=16, choices=PolicyState.choices, default="active")
    armed_at = models.DateTimeField()
    tripped_at = models.DateTimeField(null=True, blank=True)
    # Why its due messages are held back (no consumer, a vhost it cannot open), since when:
    # set by a tick that held them, cleared by one that replays (dlq/redrive/scheduler.py).
    waiting = models.TextField(blank=True, default="")
    waiting_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"redrive policy {self.name}"

    def matches(self, prefix: str = "") -> models.Q:
        """The messages its match names (`prefix`: the path to a message, "previous__")."""
        return models.Q(**{prefix + MATCH_FIELDS[k]: v for k, v in self.match.items()})

    def will_redrive(self) -> models.Q:
        """Arrivals it will replay: matched, unless their lineage spent its attempts here (the
        predecessor's count is what the arrival carries on, dlq/redrive/matching.py)."""
        spent = models.Q(previous__redrive__policy=self,
                         previous__redrive__attempt__gte=self.max_attempts)  # fmt: skip
        return self.matches() & ~spent


class RedriveDue(models.Model):
    """A stored message a policy matches: how many redrives its lineage has had under the
    policy (`attempt`) and when the next one is due (`next_at`; null when there is none:
    replayed, or exhausted). The scheduler reads only the due ones, by `redrive_due`.

    `redriven_at`: when the policy last replayed this message (a later return of it counts
    towards tripping); `returned_at`: this message is such a return, stored then."""

    message = models.OneToOneField(
        "dlq.Message", primary_key=True, on_delete=models.CASCADE, related_name="redrive"
    )
    policy = models.ForeignKey(RedrivePolicy, on_delete=models.CASCADE, related_name="due")
    attempt = models.IntegerField(default=0)
    next_at = models.DateTimeField(null=True, blank=True)
    exhausted = models.BooleanField(default=False)
    redriven_at = models.DateTimeField(null=True, blank=True)
    returned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # Partial: only what waits is in it, so a tick reads the due rows and no others.
            models.Index(
                fields=["policy", "next_at"],
                name="redrive_due",
                condition=models.Q(next_at__isnull=False),
            ),
            models.Index(
                fields=["policy", "returned_at"],
                name="redrive_returned",
                condition=models.Q(returned_at__isnull=False),
            ),
        ]

    def __str__(self):
        return f"message {self.message_id} under policy {self.policy_id}"


class RedriveMark(models.Model):
    """The matcher's progress, one row: every message at or below `upto` was matched
    against the policies when it arrived (dlq/redrive/matching.py)."""

    upto = models.BigIntegerField(default=0)

    def __str__(self):
        return f"redrive matched up to {self.upto}"
