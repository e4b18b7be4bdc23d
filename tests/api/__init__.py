"""Tests of dlq/api/: the HTTP API, its auth, errors and schema."""
