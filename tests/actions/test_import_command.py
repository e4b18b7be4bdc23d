"""`manage.py dlq_import FILE [--vhost V] [--queue Q]`: all or nothing, exit 2 naming the
bad line and field; and export and import on the embedded SQLite, in a process of its own,
over more than one chunk of the export's keyset walk."""

import json
import uuid

import pytest
from django.core.management import CommandError, call_command

from dlq.models import AuditEntry, Message
from dlq.models.actions import AuditAction
from dlq.schemas import transfer
from tests.drainproc import manage
from tests.factories import make_messages


def _export_file(path, filters: dict) -> list[dict]:
    path.write_bytes(b"".join(lines for _, lines in transfer.export_chunks(filters)))
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.mark.django_db
def test_the_command_imports_a_file_into_another_vhost_and_queue(tmp_path, capsys):
    originals = make_messages(3, queue="orders.dlq")
    lines = _export_file(tmp_path / "x.ndjson", {"queue": "orders.dlq"})

    call_command("dlq_import", str(tmp_path / "x.ndjson"), "--vhost", "staging",
                 "--queue", "orders.copy")  # fmt: skip

    copies = Message.objects.filter(queue="orders.copy").order_by("id")
    assert [(m.vhost, m.status) for m in copies] == [("staging", "parked")] * 3
    assert [bytes(m.body) for m in copies] == [bytes(m.body) for m in reversed(originals)]
    entry = AuditEntry.objects.get(action=AuditAction.IMPORT)
    assert entry.actor_name == "dlq_import"
    detail = json.loads(entry.detail)
    assert detail["source_ids"] == [line["id"] for line in lines]
    assert (detail["vhost"], detail["queue"]) == ("staging", "orders.copy")
    assert "imported 3 messages as parked" in capsys.readouterr().out


@pytest.mark.django_db
def test_a_bad_third_line_exits_2_naming_it_and_stores_nothing(tmp_path):
    make_messages(3)
    lines = _export_file(tmp_path / "x.ndjson", {})
    lines[2]["properties"]["delivery_mode"] = "persistent"
    (tmp_path / "bad.ndjson").write_text("\n".join(json.dumps(line) for line in lines))
    before = Message.objects.count()

    with pytest.raises(CommandError) as refused:
        call_command("dlq_import", str(tmp_path / "bad.ndjson"))

    assert refused.value.returncode == 2
    assert "nothing imported" in str(refused.value)
    assert "line 3.properties.delivery_mode:" in str(refused.value)
    assert Message.objects.count() == before
    with pytest.raises(CommandError) as missing:
        call_command("dlq_import", str(tmp_path / "none.ndjson"))
    assert missing.value.returncode == 2 and "No such file" in str(missing.value)
    with pytest.raises(CommandError) as bad_queue:
        call_command("dlq_import", str(tmp_path / "x.ndjson"), "--queue", "q" * 256)
    assert "queue: must be at most 255 characters" in str(bad_queue.value)


SCRIPT = """
import json, os, sys
from datetime import UTC, datetime, timedelta
from dlq.schemas import transfer
from tests.factories import make_messages

long_ago = datetime.now(UTC) - timedelta(days=3)
make_messages(1100, queue="a.dlq", body=b'{"sku": "ZEBRA-1"}')
make_messages(50, queue="a.dlq", body=b'{"sku": "other"}')
make_messages(20, queue="old.dlq", body=b'{"sku": "ZEBRA-1"}', received_at=long_ago)
since = (datetime.now(UTC) - timedelta(days=1)).isoformat()
with open(os.environ["EXPORT_FILE"], "wb") as out:
    for filters in ({"q": "zebra", "received_after": datetime.fromisoformat(since)},):
        for _, lines in transfer.export_chunks(filters):
            out.write(lines)
"""


@pytest.mark.django_db(transaction=True)
def test_export_and_import_on_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path / f'transfer-{uuid.uuid4().hex}.sqlite3'}"
    exported = tmp_path / "zebra.ndjson"
    for command in (["migrate", "--noinput"], ["shell", "-c", SCRIPT]):
        done = manage(url, *command, env={"EXPORT_FILE": str(exported)})
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = [json.loads(line) for line in exported.read_bytes().splitlines()]
    assert len(lines) == 1100  # three chunks: only the recent ZEBRA ones
    assert [line["id"] for line in lines] == sorted((line["id"] for line in lines), reverse=True)

    done = manage(url, "dlq_import", str(exported), "--queue", "copy.dlq")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "imported 1100 messages as parked" in done.stdout

    bad = tmp_path / "bad.ndjson"
    bad.write_bytes(b"\n".join(exported.read_bytes().splitlines()[:2] + [b'{"queue": "x"}']))
    done = manage(url, "dlq_import", str(bad), "--queue", "copy.dlq")
    assert done.returncode == 2
    assert "line 3.body_base64: is required" in done.stderr
    count = manage(url, "shell", "-c", "from dlq.models import Message; "
                   "print(Message.objects.filter(queue='copy.dlq').count())")  # fmt: skip
    assert count.stdout.strip().splitlines()[-1] == "1100"
