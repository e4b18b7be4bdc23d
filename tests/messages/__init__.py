"""Tests of dlq/messages/: ingest, deaths, queries, search, display, retention."""
