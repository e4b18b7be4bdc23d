"""Derive the death columns (message type, failure details, first-death time, group) and
the trace id again for stored messages, as the drainer derives them on arrival
(ingest.death_columns, traces.trace_id)."""

from django.core.management.base import BaseCommand

from dlq.messages import backfill


class Command(BaseCommand):
    help = (
        "Derive again, for messages stored by an earlier version, what this version derives on"
        " arrival (message_type, exception and failed queue, first_death_at, group, trace_id)."
        " In batches; safe to stop and re-run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, default=backfill.BATCH, help="rows per batch")

    def handle(self, *args, batch, **options):
        def progress(seen: int, total: int, changed: int) -> None:
            self.stdout.write(f"{seen} of {total} messages read, {changed} changed")

        changed = backfill.run(max(batch, 1), progress)
        self.stdout.write(self.style.SUCCESS(f"done: {changed} messages changed"))
