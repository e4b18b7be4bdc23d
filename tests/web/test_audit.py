"""The audit log page: filters (actor, action, message, job, time) validated like the API,
keyset pages, the CSV export of the API (formulas neutralised), edit diffs escaped."""

import csv
import html
import io
from datetime import timedelta

import pytest
from django.utils import timezone

from dlq import audit
from dlq.actions import message as message_actions
from dlq.models.actions import AuditEntry
from tests.factories import make_messages
from tests.uiops import body

pytestmark = pytest.mark.django_db
NIGHT = "night shift cleanup"


@pytest.fixture
def trail():
    """alice discards two messages, bob restores one, a job is created."""
    first, second = make_messages(2)
    message_actions.discard(first.pk, "alice", "duplicate order")
    message_actions.discard(second.pk, "alice", '=HYPERLINK("http://evil")')
    message_actions.restore(first.pk, "bob", "was not a duplicate")
    audit.record("carol", "job_create", NIGHT, job_id=77, detail={"filter": {"queue": "<q>"}})
    return first, second


def shown(response) -> list[str]:
    """The reasons on the page, in order."""
    text = body(response)
    return [e.reason for e in AuditEntry.objects.order_by("-id") if html.escape(e.reason) in text]


def test_it_lists_newest_first_and_filters(viewer, trail):
    first, second = trail
    everything = viewer.get("/audit/")
    assert everything.status_code == 200
    text = body(everything)
    assert text.index(NIGHT) < text.index("was not a duplicate") < text.index("duplicate order")
    assert "=HYPERLINK(&quot;http://evil&quot;)" in text

    assert shown(viewer.get("/audit/?actor=bob")) == ["was not a duplicate"]
    assert shown(viewer.get("/audit/?action=discard")) == [
        '=HYPERLINK("http://evil")',
        "duplicate order",
    ]
    assert shown(viewer.get(f"/audit/?message={first.pk}")) == [
        "was not a duplicate",
        "duplicate order",
    ]
    assert shown(viewer.get("/audit/?job=77")) == [NIGHT]
    later = (timezone.now() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S")
    assert shown(viewer.get(f"/audit/?after={later}")) == []
    assert len(shown(viewer.get(f"/audit/?before={later}"))) == 4
    assert f'href="/messages/{second.pk}/"' in text and 'href="/jobs/77/"' in text
    assert "&quot;queue&quot;: &quot;&lt;q&gt;&quot;" in text  # the job's detail, escaped


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("action=explode", "<code>action</code>: must be one of"),
        ("message=abc", "<code>message</code>: must be a whole number"),
        ("message=0", "<code>message</code>: must be at least 1"),
        ("after=last+week", "must be an ISO 8601 date-time"),
        ("cursor=nope", "not a cursor this API gave out"),
        ("limit=0", "<code>limit</code>: must be at least 1"),
        ("actor=a%00b", "must not contain NUL characters"),
    ],
)
def test_it_refuses_bad_filters_with_a_clear_error(viewer, trail, query, error):
    response = viewer.get(f"/audit/?{query}")
    assert response.status_code == 400
    assert error in body(response)


def test_it_pages_with_a_keyset_cursor(viewer, trail):
    page = body(viewer.get("/audit/?limit=3&actor="))
    assert "duplicate order" not in page
    older = page.split('<nav class="pager"', 1)[1].split('href="?', 1)[1].split('"', 1)[0]
    rest = body(viewer.get("/audit/?" + older.replace("&amp;", "&")))
    assert "duplicate order" in rest and NIGHT not in rest
    assert "Older actions" not in rest and ">Newest</a>" in rest


def test_it_exports_the_filtered_rows_as_csv_with_formulas_neutralised(viewer, trail):
    page = body(viewer.get("/audit/?action=discard"))
    assert 'href="?action=discard&amp;format=csv"' in page

    response = viewer.get("/audit/?action=discard&format=csv")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="dlq-audit-')
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["reason"] for r in rows] == ['\'=HYPERLINK("http://evil")', "duplicate order"]
    assert {r["actor"] for r in rows} == {"alice"}


def test_it_shows_an_edit_diff_escaped(viewer):
    message = make_messages(1, body=b'{"order": 1}', content_type="application/json")[0]
    headers = {**message.headers, "note": {"type": "longstr", "value": "<i>x</i>"}}
    new_body = '{"order": "<script>alert(1)</script>"}'
    message_actions.edit(
        message.pk, "alice", "fix the <b>order</b>", body_text=new_body, headers=headers
    )

    text = body(viewer.get("/audit/?action=edit"))

    assert "<script>alert(1)" not in text and "<i>x</i>" not in text and "<b>order" not in text
    assert "+{&quot;order&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;}" in text
    assert "-{&quot;order&quot;: 1}" in text
    assert "<code>headers.note</code>" in text and "&lt;i&gt;x&lt;/i&gt;" in text
    assert "fix the &lt;b&gt;order&lt;/b&gt;" in text
