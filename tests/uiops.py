"""Shared helpers of the ops page tests (groups, bulk review, jobs, audit)."""

from django.test import Client

from dlq import jobs
from dlq.ops_models import Job


def post(client: Client, url: str, data: dict | None = None, follow: bool = False):
    """POST as a browser does: with the CSRF token from the cookie a page has set."""
    client.get("/jobs/")
    token = client.cookies["csrftoken"].value
    return client.post(url, data or {}, headers={"X-CSRFToken": token}, follow=follow)


def body(response) -> str:
    return response.content.decode()


def review_url(action: str, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"action": action, **params}.items())
    return f"/bulk/review/?{query}"


def a_job(message_ids: list[int], action: str = "discard", **kwargs) -> Job:
    return jobs.create_job("tests", action, ids=message_ids, reason="test job", **kwargs)
