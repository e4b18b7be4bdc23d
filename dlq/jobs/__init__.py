"""Bulk jobs: creating and freezing, running in steps, batches, publishers (docs/layout.md)."""
