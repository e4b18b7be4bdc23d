"""The trace on a message's page (a link through DLQ_TRACE_URL and "same trace") and the
list's trace id filter, through Django's test client."""

import pytest

from tests.factories import make_message

pytestmark = pytest.mark.django_db
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = {"traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}


def test_the_message_page_links_the_trace_and_the_same_trace_list(viewer, settings):
    settings.DLQ_TRACE_URL = "https://tempo.example/explore?left=1&traceId={trace_id}"
    m = make_message(headers=TRACEPARENT)
    page = viewer.get(f"/messages/{m.pk}/").content.decode()
    assert (
        f'<a href="https://tempo.example/explore?left=1&amp;traceId={TRACE}" target="_blank"'
        ' rel="noopener noreferrer"'
    ) in page
    assert f'<a href="/messages/?trace_id={TRACE}">same trace</a>' in page


def test_a_url_with_markup_in_it_stays_one_escaped_attribute(viewer, settings):
    settings.DLQ_TRACE_URL = 'https://x.example/?q="><script>alert(1)</script>&t={trace_id}'
    m = make_message(headers=TRACEPARENT)
    page = viewer.get(f"/messages/{m.pk}/").content.decode()
    assert "<script>alert(1)" not in page
    assert f"q=&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;t={TRACE}" in page


def test_without_dlq_trace_url_the_id_shows_without_a_link(viewer, settings):
    settings.DLQ_TRACE_URL = ""
    m = make_message(headers=TRACEPARENT)
    page = viewer.get(f"/messages/{m.pk}/").content.decode()
    assert f'<code>{TRACE}</code> <a href="/messages/?trace_id={TRACE}">same trace</a>' in page
    assert 'target="_blank"' not in page.split('id="trace"')[1].split("</dd>")[0]


def test_a_message_without_a_trace_says_so(viewer):
    m = make_message()
    page = viewer.get(f"/messages/{m.pk}/").content.decode()
    assert '<dd id="trace">–</dd>' in page


def test_the_list_filters_by_trace_id_and_refuses_junk(viewer):
    traced, other = make_message(headers=TRACEPARENT), make_message()
    page = viewer.get("/messages/", {"trace_id": TRACE.upper()}).content.decode()
    assert f'href="/messages/{traced.pk}/"' in page
    assert f'href="/messages/{other.pk}/"' not in page
    assert f'value="{TRACE.upper()}"' in page  # the field keeps what was typed
    page = viewer.get("/messages/", {"trace_id": "not-a-trace"}).content.decode()
    assert "<code>trace_id</code>: must be a trace id: 16 or 32 hexadecimal digits" in page
    assert f'href="/messages/{traced.pk}/"' not in page
