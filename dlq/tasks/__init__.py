"""Celery entry points, thin wrappers over the domain packages. Each task's name is pinned
(`name=`): tasks queued before an upgrade still find their function after a move.

Imported here so that the worker's autodiscovery, which imports `dlq.tasks`, registers them.
"""

from dlq.tasks import alerts, health, jobs, redrive, search  # noqa: F401
