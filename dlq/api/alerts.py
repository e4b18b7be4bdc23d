"""/api/v1/alerts: the alerts sent, newest first, each group with its lifecycle state
(every role reads them)."""

from ninja import Query, Router

from dlq.alerts import lifecycle
from dlq.api.base import ERRORS
from dlq.schemas.alerts import AlertListQuery, AlertPage

router = Router()


@router.get("", response={200: AlertPage, **ERRORS})
def list_alerts(request, params: Query[AlertListQuery]):
    """Alerts sent to Slack, Telegram and webhooks, newest first: `id`, `at`, `channel`,
    `groups` with each group's `state` (`open`, `acknowledged`, `resolved`)."""
    sent = lifecycle.sent()
    count = sent.count()
    page = list(sent[params.offset : params.offset + params.limit])
    more = params.offset + len(page) < count
    return {
        "results": lifecycle.described(page),
        "count": count,
        "next_offset": params.offset + len(page) if more else None,
    }
