"""Shared helpers of the ops page tests (groups, bulk review, jobs, audit)."""

from dlq.jobs import control
from dlq.models.actions import Job


def body(response) -> str:
    return response.content.decode()


def review_url(action: str, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"action": action, **params}.items())
    return f"/bulk/review/?{query}"


# The bulk review's second confirmation, for a selection whose sampled routes fail (a test
# without the topology on the broker).
REPLAY_FAILING = {"replay_failing": "on"}


def a_job(message_ids: list[int], action: str = "discard", **kwargs) -> Job:
    return control.create_job("tests", action, ids=message_ids, reason="test job", **kwargs)
