"""Shared helpers of the ops page tests (groups, bulk review, jobs, audit)."""

from dlq.actions import jobs
from dlq.models.actions import Job


def body(response) -> str:
    return response.content.decode()


def review_url(action: str, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"action": action, **params}.items())
    return f"/bulk/review/?{query}"


def a_job(message_ids: list[int], action: str = "discard", **kwargs) -> Job:
    return jobs.create_job("tests", action, ids=message_ids, reason="test job", **kwargs)
