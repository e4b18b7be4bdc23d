"""One message's page through Django's test client: the body (JSON, text, hex, gzip within a
cap), typed headers, the x-death timeline, escaping, the raw download, and the history."""

import gzip
import zlib

import pytest

from dlq.messages import display
from tests.factories import make_message

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script><img src=x onerror=alert(1)>"


def page_of(client, message) -> str:
    response = client.get(f"/messages/{message.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def bomb(size: int, fill: bytes = b"\x00") -> bytes:
    """`size` bytes of `fill`, gzip-compressed (about a thousandth of the size), built in pieces
    so the test itself never holds the inflated bytes."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = fill * (1024 * 1024)
    parts = [packer.compress(chunk) for _ in range(size // len(chunk))]
    return b"".join([*parts, packer.flush()])


def test_it_pretty_prints_a_json_body(viewer):
    message = make_message(
        body=b'{"order":{"id":7,"lines":[1,2]}}', content_type="application/json"
    )
    page = page_of(viewer, message)
    assert "JSON, re-indented" in page
    assert "{\n  &quot;order&quot;: {\n    &quot;id&quot;: 7," in page


def test_it_shows_a_binary_body_as_a_hex_dump(viewer):
    message = make_message(body=b"\x89PNG\r\n\x1a\n\x00\xffABC")
    page = page_of(viewer, message)
    assert "Binary, as a hex dump" in page
    assert "00000000  89 50 4e 47 0d 0a 1a 0a 00 ff 41 42 43" in page
    assert ".PNG......ABC" in page


def test_it_decodes_gzip_for_display(viewer):
    message = make_message(body=gzip.compress(b"hello, compressed"), content_encoding="gzip")
    page = page_of(viewer, message)
    assert "gzip-decoded for display" in page and "hello, compressed" in page


def test_a_gzip_bomb_is_inflated_only_up_to_the_cap(viewer):
    body = bomb(200 * 1024 * 1024)
    assert len(body) < 1024 * 1024
    inflated = display.inflate(body, 1000)
    assert inflated.truncated and inflated.data == bytes(1000)
    message = make_message(body=body, content_encoding="gzip")
    response = viewer.get(f"/messages/{message.pk}/")
    assert response.status_code == 200
    assert 'id="body-truncated"' in response.content.decode()
    assert len(response.content) < 2 * display.PAGE_LIMIT + 200_000


def test_the_api_detail_bounds_a_gzip_bomb_and_says_so(viewer):
    message = make_message(body=bomb(200 * 1024 * 1024, b"A"), content_encoding="gzip")
    response = viewer.get(f"/api/v1/messages/{message.pk}")
    assert response.status_code == 200
    detail = response.json()
    assert detail["body_truncated"] is True
    assert detail["body_text"] == "A" * display.API_INFLATE_LIMIT


def test_the_api_detail_gives_a_small_gzip_body_whole(viewer):
    message = make_message(body=gzip.compress(b"small"), content_encoding="gzip")
    detail = viewer.get(f"/api/v1/messages/{message.pk}").json()
    assert detail["body_text"] == "small" and detail["body_truncated"] is False


def test_a_large_body_is_cut_with_a_download_link(viewer):
    body = ("line of text\n" * 40_000).encode()  # 520 kB
    message = make_message(body=body)
    page = page_of(viewer, message)
    assert 'id="body-truncated"' in page
    assert f'href="/messages/{message.pk}/raw/"' in page
    assert len(page) < len(body)


def test_the_raw_download_is_the_stored_bytes(viewer):
    body = bytes(range(256)) * 3 + b"<script>alert(1)</script>"
    message = make_message(body=body, content_type="text/html")
    response = viewer.get(f"/messages/{message.pk}/raw/")
    assert response.status_code == 200
    assert response.content == body
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"] == f'attachment; filename="message-{message.pk}.bin"'


def test_the_raw_download_of_a_gzip_body_is_not_inflated(viewer):
    body = gzip.compress(b"as stored")
    message = make_message(body=body, content_encoding="gzip")
    assert viewer.get(f"/messages/{message.pk}/raw/").content == body


def test_message_content_is_escaped_everywhere(viewer):
    message = make_message(
        body=XSS.encode(),
        headers={XSS: XSS, "nested": {"type": "table", "value": {XSS: {"type": "longstr",
                                                                       "value": XSS}}}},
        message_id=XSS[:100],
    )  # fmt: skip
    page = page_of(viewer, message)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page


def test_it_shows_headers_with_their_amqp_types(viewer):
    message = make_message(
        headers={
            "retries": {"type": "int32", "value": 3},
            "ratio": {"type": "double", "value": 1.75},
            "raw": {"type": "bytes", "base64": "AAEC"},
            "flag": {"type": "bool", "value": True},
        },
        content_type="application/json",
        priority=5,
    )
    page = page_of(viewer, message)
    shown = [("retries", "int32", "3"), ("ratio", "double", "1.75"),
             ("raw", "bytes", "base64:AAEC"), ("flag", "bool", "True")]  # fmt: skip
    for name, kind, value in shown:
        assert (
            f'<th scope="row"><code>{name}</code></th><td>{kind}</td>'
            f'<td><pre class="value">{value}</pre></td>'
        ) in page
    assert '<th scope="row"><code>priority</code></th><td>octet</td>' in page


def test_it_shows_the_x_death_timeline_and_the_exception(viewer):
    trace = "java.lang.IllegalStateException: stock is negative\n\tat com.acme.Stock.take"
    message = make_message(
        died_in="orders.work",
        reason="rejected",
        exchange="orders.events",
        routing_key="order.created",
        headers={"x-exception-message": "stock is negative", "x-exception-stacktrace": trace},
    )
    page = page_of(viewer, message)
    assert "died in <strong>orders.work</strong>, reason <strong>rejected</strong>" in page
    assert "<code>orders.events</code>" in page and "<code>order.created</code>" in page
    assert "stock is negative" in page and "at com.acme.Stock.take" in page


def test_the_page_answers_why_it_died_before_the_body_and_headers(viewer):
    trace = "\n".join(
        ["java.lang.IllegalStateException: stock is negative"]
        + [f"\tat com.acme.Frame{i}.call" for i in range(30)]
    )
    message = make_message(
        headers={"x-exception-message": "stock is negative", "x-exception-stacktrace": trace},
        timestamp=1_700_000_000,
    )
    page = page_of(viewer, message)
    why, body, headers = (page.index(s) for s in ('id="why-h"', 'id="body-h"', 'id="headers-h"'))
    assert why < body < headers
    assert page.index("java.lang.IllegalStateException") < body
    assert page.index("died in <strong>orders</strong>") < body  # the timeline
    top = page[page.index('aria-label="Top of the stack trace"') :]
    assert "Frame6.call" in top[: top.index("</pre>")]  # the first lines of the trace
    assert "Frame20.call" not in top[: top.index("</pre>")]
    assert "The whole stack trace (31 lines)" in page
    # x-death is its timeline; its typed value is one click away, folded.
    assert "<summary>shown above as the death timeline; the typed value</summary>" in page
    # A timestamp property is a date (UTC on hover, the reader's zone by script).
    assert '<time datetime="2023-11-14T22:13:20+00:00"' in page
    assert "1700000000 (seconds since 1970)" in page


def test_a_long_header_value_is_folded_behind_its_start(viewer):
    long = "tenant-" + "x" * 500
    message = make_message(headers={"long": long, "short": "kept open"})
    page = page_of(viewer, message)
    assert f'<details class="folded"><summary>{long[:80]}…</summary>' in page
    assert '<td><pre class="value">kept open</pre></td>' in page


def test_a_message_without_an_exception_says_how_it_died(viewer):
    page = page_of(viewer, make_message(died_in="billing", reason="expired"))
    assert "No exception recorded: the broker dead-lettered it as <strong>expired</strong>" in page


def test_the_summary_shows_status_counts_and_destination(viewer):
    message = make_message(exchange="orders.events", routing_key="order.created")
    page = page_of(viewer, message)
    assert "<dt>Status</dt><dd>parked</dd>" in page
    assert "exchange <code>orders.events</code>, routing key <code>order.created</code>" in page
    assert "<dt>Deaths</dt><dd>1</dd>" in page


def test_a_deeply_nested_json_body_still_renders(viewer):
    body = b"[" * 100_000 + b"]" * 100_000
    message = make_message(body=body)
    assert "Text" in page_of(viewer, message)
