"""A bulk job's publishers: one per vhost its messages were drained from (AMQP connections
are per vhost, and a message is only ever published into its own vhost).

The job opens them before its first claim (running._open_publishers: never inside a claim's
transaction); the claim thread reads each vhost's size limits to build the messages (and
opens one only if a vhost was missed); the publishing thread uses them, and keeps the idle
ones alive (ready). A vhost the
broker refuses (deleted, no permission) while it answers for others fails its messages with
an error, and the job goes on with the rest; a broker that answers nobody interrupts the
job, as a lost connection does (dlq/jobs/running.py).
"""

import logging
import threading

from django.conf import settings

from dlq.actions import replay
from dlq.broker import amqp

log = logging.getLogger("dlq.jobs")


class VhostRefused(Exception):
    """The broker answers, but not for this vhost."""


class Publishers:
    def __init__(self, factory):
        """`factory(vhost)` opens a ConfirmPublisher in that vhost."""
        self.factory = factory
        self.open: dict[str, object] = {}
        self.refused: dict[str, str] = {}
        self.lock = threading.Lock()

    def get(self, vhost: str):
        """The vhost's publisher; raises VhostRefused, or the broker's error when no node
        answers at all."""
        with self.lock:
            if vhost in self.refused:
                raise VhostRefused(self.refused[vhost])
            if vhost not in self.open:
                self.open[vhost] = self._opened(vhost)
            return self.open[vhost]

    def _opened(self, vhost: str):
        try:
            publisher = self.factory(vhost)
        except (ConnectionError, *amqp.AllErrors) as e:
            if not self._broker_answers():
                raise
            self.refused[vhost] = f"cannot publish in vhost {vhost!r}: {e}"
            raise VhostRefused(self.refused[vhost]) from None
        if publisher.vhost != vhost:  # a factory's mistake must never cross vhosts
            publisher.close()
            raise ValueError(f"a publisher for vhost {vhost!r} opened in {publisher.vhost!r}")
        return publisher

    def _broker_answers(self) -> bool:
        if any(not p.broken for p in list(self.open.values())):  # read by two threads
            return True
        try:
            amqp.ping(settings.DLQ_BROKER_URL)
        except amqp.AllErrors:
            return False
        return True

    def ready(self, vhost: str):
        """The vhost's publisher, for the publishing thread, after every open one has had a
        turn of its I/O loop (tend). A vhost's connection idles while the others publish,
        and the broker drops one that misses its heartbeats: one dropped with nothing
        outstanding is opened again (no message's fate hangs on it). One dropped in the
        middle of a batch was the batch's, which stopped on it (`broken`). The new ones are
        opened on this thread, outside any claim's transaction, and replace the dropped
        ones only once open: the claim thread reads their limits meanwhile."""
        with self.lock:
            publishers = list(self.open.items())
        for name, publisher in publishers:
            publisher.tend()
            if publisher.broken and not publisher.outstanding:
                self._reopen(name, publisher)
        return self.get(vhost)

    def _reopen(self, vhost: str, dropped) -> None:
        try:
            fresh = self._opened(vhost)
        except VhostRefused:
            return  # its messages end in error on the dropped one: the job resumes later
        with self.lock:
            self.open[vhost] = fresh
        dropped.close()
        log.warning("the broker dropped an idle connection of the job; opened again",
                    extra={"vhost": vhost})  # fmt: skip

    def limits(self, vhost: str) -> tuple[int, int]:
        """(frame_max, max message bytes) of the vhost's connection: what a message built
        for it must fit. Read on the claim thread: values the publisher kept when it opened,
        never its pika connection, which the publishing thread may be finding dead (and
        replacing) at that moment."""
        publisher = self.get(vhost)
        return publisher.frame_max, replay.max_message_bytes(publisher.server_version)

    @property
    def broken(self) -> bool:
        """A vhost's connection is gone: its outstanding publishes have an unknown fate.
        (Read without the lock: the claim thread may hold it while it opens a connection.)"""
        return any(p.broken for p in list(self.open.values()))

    def close(self) -> None:
        with self.lock:
            publishers, self.open = list(self.open.values()), {}
        for publisher in publishers:
            publisher.close()
