import faulthandler
import gc
import signal
import sys

from django.core.management.base import BaseCommand, CommandError

from dlq.broker import names
from dlq.drain.estate import Estate

SWITCH_ONE_VHOST_S = 0.0005
SWITCH_MANY_VHOSTS_S = 0.005


def tune_threads(vhosts: int) -> None:
    """The GIL's switch interval for this many busy I/O threads (bench/drain.py measured).

    With one vhost, the writer thread waits for the database with the GIL released, then
    for the GIL, which the busy I/O thread yields only every switch interval (5 ms by
    default): a batch's few round trips cost more in those waits than on the wire, so the
    interval is short. With many vhosts the I/O threads take turns (dlq/drain/baton.py),
    and 5 ms measured better than 0.5 ms (0.84-0.99 of the one-vhost rate against
    0.70-0.84, 20 vhosts); before the turns, 20 threads handing the GIL round did too.
    """
    sys.setswitchinterval(SWITCH_ONE_VHOST_S if vhosts <= 1 else SWITCH_MANY_VHOSTS_S)


class Command(BaseCommand):
    help = "Drain the configured parking queues into the database (ack after commit)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--once", action="store_true", help="drain what is there now, then exit 0"
        )
        parser.add_argument(
            "--queues",
            help="comma-separated QUEUE or VHOST/QUEUE, names or globs (default: DLQ_QUEUES)",
        )

    def handle(self, *args, once=False, queues=None, **options):
        patterns = [q.strip() for q in queues.split(",") if q.strip()] if queues else None
        try:
            drainer = Estate(patterns=patterns, once=once, tune_threads=tune_threads)
        except names.PatternError as e:
            raise CommandError(f"--queues: {e}") from None
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
