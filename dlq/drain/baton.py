"""Turns at the I/O for many vhosts' drainers in one process.

Each vhost's drainer has its own connection and thread (dlq/drain/estate.py). Left to
themselves, twenty busy I/O threads hand the GIL round every switch interval, each waiting
for it again after every recv: the same messages cost half as much CPU again as with one
vhost (bench/drain.py --vhosts 20). With the baton, a drainer waits for its socket with the
GIL released (amqp.wait_for_io), then processes what arrived holding the baton: one I/O
thread runs at a time, beside the writer, as with one vhost, and the others sleep on the
lock instead of contending for the GIL.
"""

import threading
from contextlib import contextmanager


class Baton:
    def __init__(self):
        self._lock = threading.Lock()
        self.shared = False  # more than one vhost drained: take turns (Estate sets it)

    @contextmanager
    def turn(self):
        with self._lock:
            yield
