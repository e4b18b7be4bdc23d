"""Bulk jobs on the embedded SQLite database (`make run`'s default): the same outcomes.

PostgreSQL takes one-statement paths in dlq/jobs/control.py; SQLite takes the ORM's. A job runs here
in a process of its own on a fresh SQLite file, as a worker would run it, against the real
broker: every message replayed by a publisher confirm, or discarded.
"""

import json
import uuid

import pytest

from tests.drainproc import manage
from tests.topology import depth, wait_depth

SCRIPT = """
import json, os
from django.contrib.auth import get_user_model
from dlq.models import Message
from dlq.models.actions import Job
from tests.factories import make_messages
from dlq.jobs import running
from dlq.jobs import control

park, other, work = os.environ["JOB_QUEUES"].split()
get_user_model().objects.create_user("frank")
make_messages(1200, queue=park, died_in=work)
make_messages(30, queue=other, died_in=work)
replay = control.create_job("frank", "replay", filters={"queue": park}, target="failed_queue",
                         reason="consumer fixed")
replayed = running.run_job(replay.pk)
discard = control.create_job("frank", "discard", filters={"queue": other}, reason="obsolete")
discarded = running.run_job(discard.pk)
print(json.dumps({
    "results": [replayed, discarded],
    "jobs": [list(Job.objects.filter(pk=pk).values_list("status", "total", "done", "failed").get())
             for pk in (replay.pk, discard.pk)],
    "statuses": {q: sorted(set(Message.objects.filter(queue=q).values_list("status", flat=True)))
                 for q in (park, other)},
}))
"""


@pytest.mark.django_db(transaction=True)
def test_a_bulk_replay_and_a_bulk_discard_on_sqlite(channel, top, tmp_path):
    work = top.queue("work")
    park, other = top.name("dlq"), top.name("other.dlq")
    url = f"sqlite:///{tmp_path / f'jobs-{uuid.uuid4().hex}.sqlite3'}"
    env = {"JOB_QUEUES": f"{park} {other} {work}"}
    for command in (["migrate", "--noinput"], ["shell", "-c", SCRIPT]):
        done = manage(url, *command, env=env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["results"] == ["done", "done"]
    assert report["jobs"] == [["done", 1200, 1200, 0], ["done", 30, 30, 0]]
    assert report["statuses"] == {park: ["replayed"], other: ["discarded"]}
    wait_depth(channel, work, 1200)
    assert depth(channel, work) == 1200  # every replay confirmed reached the failed queue
