"""/metrics in the Prometheus text format, read from the database at scrape time.

The drainer, the Celery workers and the web are separate processes (and may be many), so
in-process counters would each tell a part. Everything here comes from rows they all
write: drain counters and heartbeats (dlq/drain/heartbeat.py), stored messages, replay and
alert attempts, jobs. Any web process answers for the whole deployment.

Access: a Bearer token (DLQ_METRICS_TOKEN), a client address in DLQ_METRICS_ALLOWED_NETS
(loopback by default: bind or proxy the scraper there), or a signed-in viewer.
"""

import hmac
import ipaddress

from django.conf import settings
from django.db.models import Count
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from dlq.accounts.roles import VIEWER, has_role
from dlq.health import cluster, drainers
from dlq.health.queues import broker_queues, depths_of
from dlq.messages import search
from dlq.models import AlertAttempt, DrainedQueue, Message
from dlq.models.actions import Job, JobStatus, Replay
from dlq.models.health import DrainCounter

ACTIVE_JOBS = (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.WAITING)


@require_GET
@never_cache
def metrics(request):
    denied = _denied(request)
    if denied is not None:
        return denied
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ConsoleCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def _denied(request) -> HttpResponse | None:
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        token = settings.DLQ_METRICS_TOKEN
        if token and hmac.compare_digest(auth.removeprefix("Bearer ").encode(), token.encode()):
            return None
        return _unauthorized()  # a wrong token never falls back to the address or session
    if _internal(request.META.get("REMOTE_ADDR", "")) or has_role(request.user, VIEWER):
        return None
    if request.user.is_authenticated:
        return HttpResponse("this needs the viewer role\n", status=403, content_type="text/plain")
    return _unauthorized()


def _unauthorized() -> HttpResponse:
    response = HttpResponse("metrics need a token\n", status=401, content_type="text/plain")
    response["WWW-Authenticate"] = "Bearer"
    return response


def _internal(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in settings.DLQ_METRICS_ALLOWED_NETS if ip.version == net.version)


class ConsoleCollector:
    """One scrape: a handful of grouped queries, each one a metric family."""

    def collect(self):
        known = sorted(DrainedQueue.objects.values_list("vhost", "name"))
        queues = broker_queues(sorted({vhost for vhost, _ in known}))
        state, _ = cluster.report()
        yield from self._drain()
        yield self._stored()
        yield self._backlog(known, queues)
        yield self._search_lag()
        yield from self._drainers(state)
        yield from self._nodes(state)
        yield from self._placement(known, queues, state)
        yield self._replays()
        yield self._alerts()
        yield from self._jobs()

    def _drain(self):
        drained = CounterMetricFamily(
            "dlq_messages_drained", "Messages drained into the console", labels=["vhost", "queue"]
        )
        for row in DrainCounter.objects.order_by("vhost", "queue"):
            drained.add_metric([row.vhost, row.queue], row.total)
        yield drained

    def _stored(self):
        stored = GaugeMetricFamily(
            "dlq_messages",
            "Messages the console holds, by queue and status",
            labels=["vhost", "queue", "status"],
        )
        # COUNT(*), not COUNT(id): msg_overview (vhost, queue, status, ...) answers it alone,
        # an index-only scan (a quarter of the time at a million rows); id is not in it.
        per = Message.objects.order_by().values("vhost", "queue", "status")
        rows = per.annotate(n=Count("*"))
        for row in sorted(rows, key=lambda r: (r["vhost"], r["queue"], r["status"])):
            stored.add_metric([row["vhost"], row["queue"], row["status"]], row["n"])
        return stored

    def _backlog(self, known, queues):
        """Drain lag, in messages: what waits on the broker in the drained queues."""
        backlog = GaugeMetricFamily(
            "dlq_queue_backlog_messages",
            "Messages waiting on the broker in drained queues (absent if the API is down)",
            labels=["vhost", "queue"],
        )
        depths = depths_of(queues)
        for vhost, name in known:
            if (vhost, name) in depths:
                backlog.add_metric([vhost, name], depths[(vhost, name)])
        return backlog

    def _search_lag(self):
        """Messages the search indexer has not reached: searches stay exact, but read
        them one by one (dlq/search.py); a growing figure means beat is not running."""
        lag = GaugeMetricFamily(
            "dlq_search_index_lag_messages", "Stored messages the search index has not reached"
        )
        lag.add_metric([], Message.objects.filter(id__gt=search.indexed_upto()).count())
        return lag

    def _drainers(self, state):
        now = timezone.now()
        labels = ["drainer"]
        up = GaugeMetricFamily("dlq_drainer_up", "1 if the drainer reports, else 0", labels=labels)
        queues = GaugeMetricFamily("dlq_drainer_queues", "Queues being drained", labels=labels)
        age = GaugeMetricFamily(
            "dlq_drainer_last_batch_age_seconds",
            "Seconds since the last stored batch",
            labels=labels,
        )
        latency = HistogramMetricFamily(
            "dlq_drain_batch_seconds", "Time to store and ack one batch", labels=labels
        )
        on = GaugeMetricFamily(
            "dlq_drainer_node",
            "1 for each broker node a reporting drainer is connected to now",
            labels=["drainer", "node", "address"],
        )
        running = 0
        for row in drainers.recent_drainers(now):
            alive = row.stopped_at is None and not drainers.is_stale(row, now)
            running += alive
            up.add_metric([row.name], int(alive))
            queues.add_metric([row.name], row.queues if alive else 0)
            for where in cluster.drainer_nodes(state, row.node) if alive else ():
                on.add_metric([row.name, where["node"], where["address"]], 1)
            if row.last_batch_at:
                age.add_metric([row.name], (now - row.last_batch_at).total_seconds())
            buckets = sorted(row.latency_buckets.items(), key=lambda kv: float(kv[0]))
            if buckets:
                latency.add_metric([row.name], buckets, sum_value=row.latency_sum)
        total = GaugeMetricFamily("dlq_drainers_running", "Drainers reporting now")
        total.add_metric([], running)
        yield from (total, up, queues, age, latency, on)

    def _nodes(self, state):
        """Each node of the cluster, as a running node's management API sees it (absent
        while no node's API answers)."""
        up = GaugeMetricFamily("dlq_broker_node_up", "1 if the broker node runs", labels=["node"])
        for node in state.nodes if state else ():
            up.add_metric([node.name], int(node.running))
        yield up

    def _placement(self, known, queues, state):
        """Drained queues a node loss hurts: replicas online of all, and whether the queue
        can be used at all (a leader online; a classic queue's node up)."""
        labels = ["vhost", "queue"]
        replicas = GaugeMetricFamily(
            "dlq_queue_replicas", "Replicas of a drained queue (1 for classic)", labels=labels
        )
        online = GaugeMetricFamily(
            "dlq_queue_replicas_online", "Replicas of a drained queue online", labels=labels
        )
        available = GaugeMetricFamily(
            "dlq_queue_available",
            "1 if the drained queue has a leader (classic: its node) running, else 0",
            labels=labels,
        )
        running = state.running if state else None
        for key in known:
            where = cluster.placement(queues[key], running) if key in queues else None
            if where is not None:
                replicas.add_metric(list(key), where.replicas)
                online.add_metric(list(key), where.online)
                available.add_metric(list(key), int(where.available))
        yield from (replicas, online, available)

    def _replays(self):
        replays = GaugeMetricFamily(
            "dlq_replay_attempts",
            "Replay attempts on record by outcome (pending = awaiting the broker)",
            labels=["outcome"],
        )
        rows = Replay.objects.order_by().values("outcome").annotate(n=Count("id"))
        for row in sorted(rows, key=lambda r: r["outcome"]):
            replays.add_metric([row["outcome"] or "pending"], row["n"])
        return replays

    def _alerts(self):
        attempts = GaugeMetricFamily(
            "dlq_alert_attempts",
            "Alert delivery attempts on record by channel and status",
            labels=["channel", "status"],
        )
        rows = (
            AlertAttempt.objects.order_by().values("channel_name", "status").annotate(n=Count("id"))
        )
        for row in sorted(rows, key=lambda r: (r["channel_name"], r["status"])):
            attempts.add_metric([row["channel_name"], row["status"]], row["n"])
        return attempts

    def _jobs(self):
        labels = ["job", "action", "status"]
        items = GaugeMetricFamily(
            "dlq_job_items", "Items of pending and running jobs", labels=[*labels, "state"]
        )
        progress = GaugeMetricFamily(
            "dlq_job_progress_ratio", "Share of a job's items settled (0..1)", labels=labels
        )
        for job in Job.objects.filter(status__in=ACTIVE_JOBS).order_by("id"):
            key = [str(job.id), job.action, job.status]
            for state in ("total", "done", "failed"):
                items.add_metric([*key, state], getattr(job, state))
            progress.add_metric(key, (job.done + job.failed) / job.total if job.total else 0.0)
        yield from (items, progress)
