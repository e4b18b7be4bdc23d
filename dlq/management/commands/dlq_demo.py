import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from dlq.broker import amqp
from dlq.management import demo
from dlq.management.firstrun import WHAT_DLQ_QUEUES_IS, drained_lines


class Command(BaseCommand):
    help = (
        "Declare a small demo topology on the broker (DLQ_BROKER_URL) and dead-letter a "
        "varied set of messages into it. Idempotent: every run adds another set."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--prefix", default="demo", help="name prefix of the demo's queues (default: demo)"
        )
        parser.add_argument(
            "--delete", action="store_true", help="remove the demo's queues and exchanges"
        )

    def handle(self, *args, prefix="demo", delete=False, **options):
        url = settings.DLQ_BROKER_URL
        try:
            if delete:
                removed = demo.delete(url, prefix)
                self.stdout.write(f"deleted {', '.join(removed)}")
                return
            started = time.monotonic()
            results = demo.run(url, prefix)
        except demo.DemoError as e:
            raise CommandError(str(e)) from None
        except amqp.AllErrors as e:
            raise CommandError(f"broker {amqp.describe(url)}: {e!r}") from None
        elapsed = time.monotonic() - started
        self.stdout.write(f"demo topology {prefix}.* declared on {amqp.describe(url)}")
        total = 0
        for queue, what in results:
            count = sum(what.values())
            total += count
            detail = ", ".join(f"{reason} {n}" for reason, n in what.items())
            self.stdout.write(f"  {queue:<32} +{count:<3} {detail}")
        self.stdout.write(
            f"dead-lettered {total} messages in {elapsed:.1f} s into the parking queues; the"
            f" demo's work queues ({prefix}.orders, {prefix}.payments.retry, ...) stay the"
            " services' own"
        )
        self.stdout.write(WHAT_DLQ_QUEUES_IS)
        for line in drained_lines():
            self.stdout.write(line)
