"""Which of the drainer's hot modules run compiled (setup.py), and a guard against old builds.

An editable install (`make setup`) builds dlq/broker/_wire.pyx, dlq/messages/deaths.py,
dlq/messages/ingest.py and dlq/text.py into C extensions beside their sources, and Python
imports an extension before a source of the same name: after an edit, the old build would go
on running, silently. setup.py records the SHA-256 of each source it built in
dlq/_compiled.json, and `check()`, run when the package is imported, refuses a build whose
source has changed since. An install from a wheel has no such file: its extensions and
sources come from the same build.
"""

import hashlib
import json
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "_compiled.json"
# module -> its source in dlq/: the decoder written for Cython, two modules compiled as is.
SOURCES = {
    "dlq.broker._wire": "broker/_wire.pyx",
    "dlq.messages.deaths": "messages/deaths.py",
    "dlq.messages.ingest": "messages/ingest.py",
    "dlq.text": "text.py",  # clean(), called for every derived column of every message
}


class StaleBuild(ImportError):
    """A compiled hot module is older than its source."""


def built() -> list[str]:
    """The hot modules that have a compiled build beside their source."""
    return [
        name
        for name in SOURCES
        if any(_extension(name, suffix).exists() for suffix in EXTENSION_SUFFIXES)
    ]


def _extension(name: str, suffix: str) -> Path:
    """Where a module's build lies: beside its source."""
    return (HERE / SOURCES[name]).with_name(name.rpartition(".")[2] + suffix)


def _digest(name: str) -> str:
    return hashlib.sha256((HERE / SOURCES[name]).read_bytes()).hexdigest()


def check() -> None:
    names = built()
    if not names or not MANIFEST.exists():
        return
    try:
        recorded = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        recorded = {}
    stale = [name for name in names if recorded.get(name) != _digest(name)]
    if stale:
        raise StaleBuild(
            f"{', '.join(stale)} changed since it was compiled: run `make setup` to build it"
            " again, or delete its .so file beside the source to run the source"
        )


def describe() -> str:
    """For the drainer's start-up line: what runs compiled."""
    names = built()
    return ", ".join(n.rpartition(".")[2] for n in names) if names else "none (pure Python)"
