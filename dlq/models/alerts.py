"""Alerts: their configuration (channels, rules, mutes) and the engine's state (the settled
arrival horizon, known failure groups, digests, every delivery attempt, per-channel token
buckets). The engine itself is dlq/alerts/."""

from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction


class ChannelKind(models.TextChoices):
    SLACK = "slack"
    TELEGRAM = "telegram"
    WEBHOOK = "webhook"


def mask_secret(value: str) -> str:
    """Enough of a secret to recognise it (its last 4 characters), never enough to use it."""
    value = str(value or "")
    return f"…{value[-4:]}" if len(value) >= 16 else "…"


def mask_url(url: str) -> str:
    """The scheme, host and port of a URL, and the last characters of the whole: its path,
    query and credentials are where webhooks keep their secrets."""
    text = str(url or "")
    try:
        parts = urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError:  # an impossible port, a broken IPv6 literal
        return mask_secret(text)
    if not parts.scheme or not host:
        return mask_secret(text)
    netloc = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{netloc}{f':{port}' if port else ''}/{mask_secret(text)}"


class AlertChannel(models.Model):
    """Where alerts go. `config` holds the secrets (webhook URL, bot token): it is never
    shown after saving, never logged and never part of str() or repr(); see `masked`."""

    kind = models.CharField(max_length=16, choices=ChannelKind.choices)
    name = models.CharField(max_length=100, unique=True)
    config = models.JSONField(default=dict)
    enabled = models.BooleanField(default=True)
    disabled_reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.kind} channel {self.name}"

    def __repr__(self):
        return f"<AlertChannel {self.pk}: {self.kind} {self.name}>"

    @property
    def masked(self) -> str:
        """The destination with its secret masked, for lists, logs and viewers."""
        config = self.config or {}
        if self.kind == ChannelKind.TELEGRAM:
            return f"bot {mask_secret(config.get('token'))} chat {config.get('chat_id', '')}"
        return mask_url(config.get("url", ""))


class AlertRule(models.Model):
    """Which queues, which channels, when: at least `threshold` new messages within
    `window_minutes`, at most one digest per `digest_minutes`; new failure groups at once."""

    name = models.CharField(max_length=100, unique=True)
    queues = models.TextField(default="*", help_text="queue names or globs, comma-separated")
    channels = models.ManyToManyField(AlertChannel, blank=True, related_name="rules")
    all_channels = models.BooleanField(default=False, help_text="every enabled channel")
    threshold = models.PositiveIntegerField(default=1)
    window_minutes = models.PositiveIntegerField(default=5)
    digest_minutes = models.PositiveIntegerField(default=15)
    alert_new_groups = models.BooleanField(default=True)
    quiet_start = models.TimeField(null=True, blank=True)
    quiet_end = models.TimeField(null=True, blank=True)
    quiet_tz = models.CharField(max_length=64, default="UTC")
    enabled = models.BooleanField(default=True)
    # Engine state: the last Message id counted, and when this rule last sent an alert.
    cursor = models.BigIntegerField(default=0)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(threshold__gte=1, window_minutes__gte=1, digest_minutes__gte=1),
                name="alertrule_positive",
            )
        ]

    def __str__(self):
        return f"rule {self.name}"

    @property
    def patterns(self) -> list[str]:
        return [p.strip() for p in self.queues.replace("\n", ",").split(",") if p.strip()]

    def clean(self):
        errors = {}
        if not self.patterns:
            errors["queues"] = "name at least one queue or glob (* for all)"
        if (self.quiet_start is None) != (self.quiet_end is None):
            errors["quiet_end"] = "quiet hours need both a start and an end"
        try:
            ZoneInfo(self.quiet_tz)
        except (ZoneInfoNotFoundError, ValueError):
            errors["quiet_tz"] = "not a time zone name (e.g. Europe/Berlin, UTC)"
        if errors:
            raise ValidationError(errors)


class Mute(models.Model):
    """Silence a queue (name or glob), a failure group, or a group in a queue, until a time."""

    # VHOST/QUEUE: a vhost and a queue name of 255 bytes each, a vhost's slashes as %2F.
    queue = models.CharField(max_length=1000, blank=True, default="")
    group = models.CharField(max_length=16, blank=True, default="")
    until = models.DateTimeField()
    reason = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_by_name = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(queue="", group=""), name="mute_queue_or_group"
            )
        ]

    def __str__(self):
        return f"mute {self.queue or '*'}/{self.group or '*'} until {self.until:%Y-%m-%d %H:%M}"


class ArrivalHorizon(models.Model):
    """One row: every Message id up to `safe_id` is committed or will never be.

    Ids are handed out before commit, so a batch still committing can hold ids below a
    batch already visible; rules count only up to this horizon so nothing is skipped.
    `watch_top`/`watch_since`: the highest id seen when a gap was first noticed, and when.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    safe_id = models.BigIntegerField(default=0)
    watch_top = models.BigIntegerField(null=True, blank=True)
    watch_since = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"arrival horizon {self.safe_id}"


class KnownGroup(models.Model):
    """A failure group the console has seen, with the first Message id that carried it."""

    group = models.CharField(max_length=16, primary_key=True)
    first_id = models.BigIntegerField()
    first_seen_at = models.DateTimeField()

    def __str__(self):
        return f"group {self.group}"


class AlertDigest(models.Model):
    """Arrivals a rule has counted: open while it gathers them, closed once dispatched.

    Counts are folded in per evaluated id range, so they are exact however the drainer
    batched the arrivals. `groups` maps a group to its count and what identifies it;
    `minutes` counts arrivals per minute for the threshold window.
    """

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="digests")
    opened_at = models.DateTimeField()
    first_id = models.BigIntegerField()
    last_id = models.BigIntegerField()
    first_received_at = models.DateTimeField()
    last_received_at = models.DateTimeField()
    count = models.BigIntegerField(default=0)
    queues = models.JSONField(default=dict)
    groups = models.JSONField(default=dict)
    other_groups = models.BigIntegerField(default=0)
    new_groups = models.JSONField(default=list)
    minutes = models.JSONField(default=dict)
    triggered_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=16, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["rule"],
                condition=models.Q(sent_at__isnull=True),
                name="alertdigest_one_open_per_rule",
            )
        ]

    def __str__(self):
        return f"digest {self.pk} of {self.count} for rule {self.rule_id}"


class AttemptStatus(models.TextChoices):
    QUEUED = "queued"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"  # transient: retried while tries remain
    REJECTED = "rejected"  # permanent: the channel was disabled
    RATE_LIMITED = "rate_limited"
    SKIPPED = "skipped"  # the channel was disabled or deleted before sending


class AlertAttempt(models.Model):
    """One try to deliver one alert to one channel: written before the request is made,
    updated with its outcome, so "did the alert go out?" always has an answer."""

    channel = models.ForeignKey(AlertChannel, null=True, on_delete=models.SET_NULL)
    channel_name = models.CharField(max_length=100)
    rule = models.ForeignKey(AlertRule, null=True, blank=True, on_delete=models.SET_NULL)
    digest = models.ForeignKey(AlertDigest, null=True, blank=True, on_delete=models.SET_NULL)
    kind = models.CharField(max_length=16)  # digest, new_group, test, drainer or policy
    try_no = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(
        max_length=16, choices=AttemptStatus.choices, default=AttemptStatus.QUEUED
    )
    not_before = models.DateTimeField()
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    summary = models.CharField(max_length=255, blank=True, default="")
    # A sent chat alert: where it is (Telegram: chat and message ids, to edit it) and the
    # group states it shows, so a change of state edits it once.
    chat_message = models.JSONField(default=dict, blank=True)
    shown_states = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["channel", "-id"], name="attempt_channel_id"),
            models.Index(fields=["status", "not_before"], name="attempt_status_due"),
        ]

    def __str__(self):
        return f"attempt {self.pk} ({self.status}) to {self.channel_name}"


class TokenBucket(models.Model):
    """A tiny rate limiter in the database, shared by every worker (after healthchecks).

    `tokens` is the fraction of the bucket left: each use takes 1/capacity, and the bucket
    refills completely in `refill_seconds`.
    """

    key = models.CharField(max_length=80, unique=True)
    tokens = models.FloatField(default=1.0)
    updated_at = models.DateTimeField()

    def __str__(self):
        return f"bucket {self.key}"

    @classmethod
    def take(cls, key: str, capacity: int, refill_seconds: float, now) -> bool:
        """Take one token if there is one; the row lock makes concurrent takers exact."""
        with transaction.atomic():
            cls.objects.get_or_create(key=key, defaults={"updated_at": now})
            bucket = cls.objects.select_for_update().get(key=key)
            elapsed = max((now - bucket.updated_at).total_seconds(), 0.0)
            tokens = min(1.0, bucket.tokens + elapsed / refill_seconds) - 1.0 / capacity
            if tokens < -1e-9:
                return False
            bucket.tokens, bucket.updated_at = tokens, now
            bucket.save(update_fields=["tokens", "updated_at"])
            return True


# --- alerts you can act on (dlq/alerts/chat/, dlq/alerts/slack/, dlq/alerts/telegram/) --


class ChatVia(models.TextChoices):
    SLACK = "slack"
    TELEGRAM = "telegram"


class ChatLink(models.Model):
    """A Slack or Telegram user linked to a console user: their presses act as that user,
    with the role the user has at the moment of the press."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_links"
    )
    via = models.CharField(max_length=8, choices=ChatVia.choices)
    chat_user = models.CharField(max_length=64)  # Slack's U..., Telegram's numeric id
    chat_name = models.CharField(max_length=150, blank=True, default="")  # as the chat said
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["via", "chat_user"], name="chatlink_one_per_chat_user")
        ]

    def __str__(self):
        return f"{self.via} user {self.chat_user}"


class LinkCode(models.Model):
    """A one-time link code; only its SHA-256 is stored. Telegram: made on /account/ for the
    signed-in `user`, redeemed by the bot's `/start CODE`. Slack: made for an unlinked
    `chat_user` who pressed a button, redeemed by whoever opens its URL signed in."""

    code_hash = models.CharField(max_length=64, unique=True)
    via = models.CharField(max_length=8, choices=ChatVia.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    chat_user = models.CharField(max_length=64, blank=True, default="")
    chat_name = models.CharField(max_length=150, blank=True, default="")
    bot = models.CharField(max_length=64, blank=True, default="")  # Telegram: the bot's key
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.via} link code {self.pk}"


class AlertButton(models.Model):
    """What a button press names: one group of one sent alert, behind an opaque random
    reference (Telegram's callback_data holds 64 bytes, and a chat payload is never
    trusted to carry what it acts on)."""

    ref = models.CharField(max_length=24, unique=True)
    attempt = models.ForeignKey(AlertAttempt, on_delete=models.CASCADE, related_name="buttons")
    group = models.CharField(max_length=16)
    position = models.PositiveSmallIntegerField()  # 1, 2, ... as the alert numbers them

    def __str__(self):
        return f"button {self.ref} for group {self.group}"


class TelegramBot(models.Model):
    """A bot the console's Telegram channels use (several channels may share one): its name
    from getMe, the durable getUpdates offset, and the last problem polling met."""

    key = models.CharField(max_length=64, unique=True)  # SHA-256 of the token, never the token
    username = models.CharField(max_length=64, blank=True, default="")
    offset = models.BigIntegerField(default=0)
    problem = models.TextField(blank=True, default="")
    checked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"telegram bot {self.username or self.key[:8]}"


class ChatDelivery(models.Model):
    """A chat request or update already taken (a Slack request's signature, a Telegram
    bot's update id): taken again, it is refused (replay protection, and Telegram's
    redelivery of a webhook update), so a press is never done twice. Kept a day."""

    key = models.CharField(max_length=100, unique=True)
    seen_at = models.DateTimeField(db_index=True)

    def __str__(self):
        return f"chat delivery {self.key[:20]}"
