"""Tests of dlq/actions/: edit, replay, discard and restore, bulk jobs, the audit trail."""
