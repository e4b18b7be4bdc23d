"""The tables, one module per concept. Importing them here registers them with Django."""

from dlq.models.accounts import ApiToken, Identity, IdentitySource
from dlq.models.actions import (
    AuditAction,
    AuditEntry,
    ItemState,
    Job,
    JobItem,
    JobStatus,
    MessageVersion,
    Outcome,
    Replay,
    ReplayOverride,
)
from dlq.models.alerts import (
    AlertAttempt,
    AlertChannel,
    AlertDigest,
    AlertRule,
    ArrivalHorizon,
    AttemptStatus,
    ChannelKind,
    KnownGroup,
    Mute,
    TokenBucket,
    mask_secret,
    mask_url,
)
from dlq.models.health import DrainCounter, DrainerHeartbeat, StatusChange
from dlq.models.messages import DrainedQueue, Message, PendingBatch, QueueTally, Status
from dlq.models.search import SearchEntry, SearchWatermark
