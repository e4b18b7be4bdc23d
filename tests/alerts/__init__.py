"""Tests of dlq/alerts/: rules, digests, channels, delivery."""
