"""Tests of dlq/health/: probes, drainers, queues, topology, metrics."""
