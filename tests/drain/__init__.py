"""Tests of dlq/drain/: the drainer as a process, its batches and what it stores."""
