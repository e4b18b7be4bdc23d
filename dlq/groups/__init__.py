"""Failure groups as a worklist: `summary` (a window's groups, one group's header),
`worklist` (every group with its counts, queues and derived state), `triage` (owner, note,
ticket and hold, as operators set them, and the holds the alert engine keeps)."""
