import faulthandler
import gc
import signal

from django.core.management.base import BaseCommand

from dlq.drain import Drainer


class Command(BaseCommand):
    help = "Drain the configured parking queues into the database (ack after commit)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--once", action="store_true", help="drain what is there now, then exit 0"
        )
        parser.add_argument("--queues", help="comma-separated names or globs (default: DLQ_QUEUES)")

    def handle(self, *args, once=False, queues=None, **options):
        patterns = [q.strip() for q in queues.split(",") if q.strip()] if queues else None
        drainer = Drainer(patterns=patterns, once=once)
        signal.signal(signal.SIGTERM, drainer.stop)
        signal.signal(signal.SIGINT, drainer.stop)
        # `kill -USR1 PID` prints every thread's stack to stderr: a stuck drainer explains
        # itself without being stopped.
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        # What start-up made (Django, pika, the settings) lives as long as the process: out
        # of the collector's sight, a full collection walks only the messages in hand. About
        # a tenth of the drainer's CPU (bench/drain.py).
        gc.freeze()
        code = drainer.run()
        if code:
            raise SystemExit(code)
