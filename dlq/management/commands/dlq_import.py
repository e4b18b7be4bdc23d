"""Import exported messages (an export's NDJSON file) as new parked messages: all or nothing,
as POST /api/v1/messages/import does (dlq/schemas/transfer.py)."""

import sys

from django.core.management.base import BaseCommand, CommandError

from dlq.actions.errors import ActionError
from dlq.schemas import transfer


class Command(BaseCommand):
    help = (
        "Store each line of FILE (GET /api/v1/messages/export's NDJSON; - for stdin) as a new"
        " parked message, in the line's vhost and queue unless --vhost/--queue say otherwise."
        " All or nothing: a bad line stores nothing and exits 2, naming the line and field."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the NDJSON file, or - for stdin")
        parser.add_argument("--vhost", help="store every message in this vhost")
        parser.add_argument("--queue", help="store every message in this queue")

    def handle(self, *args, file, vhost, queue, **options):
        try:
            target = transfer.target_of(vhost, queue)
            if file == "-":
                result = transfer.import_from(sys.stdin.buffer, "dlq_import", "stdin", target)
            else:
                with open(file, "rb") as stream:
                    result = transfer.import_from(stream, "dlq_import", file, target)
        except OSError as e:
            raise CommandError(f"{file}: {e.strerror}", returncode=2) from None
        except ActionError as e:
            said = "\n".join(f"{field}: {' '.join(found)}" for field, found in e.errors.items())
            raise CommandError(f"nothing imported:\n{said}", returncode=2) from None
        first, last = (result.ids[0], result.ids[-1]) if result.ids else (None, None)
        self.stdout.write(self.style.SUCCESS(
            f"imported {len(result.ids)} messages as parked (ids {first} to {last}; audit row"
            f" {result.audit_id} maps them to their exported ids)"))  # fmt: skip
