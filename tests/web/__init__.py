"""Tests of dlq/web/: the pages through the test client and in a real browser."""
