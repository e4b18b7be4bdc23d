"""Celery entry point for the search index: a thin wrapper over dlq/messages/search.py."""

from celery import shared_task

from dlq.messages import search


@shared_task(name="dlq.tasks.index_search", ignore_result=True)
def index_search() -> int:
    """Beat, every few seconds: copy new messages into the search index."""
    return search.index()
