"""What the operations side keeps: drainer heartbeats, drain counters, status changes."""

from django.db import models


class DrainerHeartbeat(models.Model):
    """One running (or stopped) drainer process, as it last reported itself
    (dlq/drain/heartbeat.py)."""

    name = models.CharField(max_length=255, unique=True)  # "dlq-drain HOST pid PID"
    host = models.CharField(max_length=255)
    pid = models.IntegerField()
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    last_batch_at = models.DateTimeField(null=True, blank=True)
    stopped_at = models.DateTimeField(null=True, blank=True)  # a clean stop
    queues = models.IntegerField(default=0)
    # The broker node(s) its connections go through now, "host:port" comma-separated
    # ("" while it is not connected): which node the drainer depends on, on a cluster.
    node = models.CharField(max_length=255, blank=True, default="")
    stored = models.BigIntegerField(default=0)
    batches = models.BigIntegerField(default=0)
    # Batch write latency as a Prometheus histogram: cumulative counts per bucket bound.
    latency_buckets = models.JSONField(default=dict)
    latency_sum = models.FloatField(default=0.0)
    alerted_at = models.DateTimeField(null=True, blank=True)  # "stopped reporting" sent

    def __str__(self):
        return self.name


class DrainCounter(models.Model):
    """Messages drained per queue since the console was installed: a true counter, which
    retention purges do not lower (unlike counting stored rows)."""

    vhost = models.CharField(max_length=255)
    queue = models.CharField(max_length=255)
    total = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["vhost", "queue"], name="draincounter_queue")
        ]

    def __str__(self):
        return f"{self.queue}: {self.total}"


class StatusChange(models.Model):
    """When a message last became replayed or discarded. Written by a database trigger
    (migrations 0013 and 0025), so every code path (actions, bulk jobs, plain UPDATEs)
    keeps it right; retention counts its days from here, not from the arrival, and only
    while `status` matches the message's."""

    message = models.OneToOneField(
        "dlq.Message", primary_key=True, on_delete=models.CASCADE, related_name="status_change"
    )
    status = models.CharField(max_length=16)
    at = models.DateTimeField(db_index=True)

    def __str__(self):
        return f"{self.message_id} {self.status} at {self.at}"


class TopologyAcknowledgement(models.Model):
    """An admin's word that a topology warning (a check on a queue in a vhost) is known and
    accepted: the page moves it out of the warnings (dlq/health/acknowledgements.py). The
    actor is kept by name, as in the audit trail, so deleting a user keeps who said so."""

    vhost = models.CharField(max_length=255)
    queue = models.CharField(max_length=255)
    check_name = models.CharField(max_length=32)  # a Finding's check ("check" is Django's)
    reason = models.TextField()
    actor_name = models.CharField(max_length=150)
    at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["vhost", "queue", "check_name"], name="topology_ack_key"
            )
        ]

    def __str__(self):
        return f"{self.check_name} on {self.vhost}/{self.queue}"
