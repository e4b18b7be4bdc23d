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
    AlertButton,
    AlertChannel,
    AlertDigest,
    AlertRule,
    ArrivalHorizon,
    AttemptStatus,
    ChannelKind,
    ChatDelivery,
    ChatLink,
    ChatVia,
    KnownGroup,
    LinkCode,
    Mute,
    TelegramBot,
    TokenBucket,
    mask_secret,
    mask_url,
)
from dlq.models.groups import GroupTally, GroupTriage
from dlq.models.health import (
    DrainCounter,
    DrainerHeartbeat,
    StatusChange,
    TopologyAcknowledgement,
)
from dlq.models.messages import DrainedQueue, Message, PendingBatch, QueueTally, Status
from dlq.models.redrive import PolicyState, RedriveDue, RedriveMark, RedrivePolicy
from dlq.models.search import SearchEntry, SearchWatermark
