"""Hostile messages, dead-lettered by the broker and drained by the real drainer, on every page
each role reaches from `/`: header names of any bytes, spoofing text in the routing key, the
exchange, the queue, the message type and the exception, bodies and properties as the wire
allows them. No page answers 5xx, every page is UTF-8 with no hidden character left as it is
(controls and bidi controls are shown as escapes), and the operator's edit form gives the
message back exactly (issue 25, defects 1 and 8; property-based)."""

import html
import json
import re
from urllib.parse import urlencode, urljoin, urlsplit

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dlq.broker import amqp
from dlq.jobs import control
from dlq.models import Message
from tests.conftest import drain_once
from tests.factories import client_for, make_user, post
from tests.hostile import SPOOFING, property_sets, spoofing_text, tables, typed_headers
from tests.topology import reject

pytestmark = pytest.mark.django_db(transaction=True)
ROLES = ("viewer", "operator", "admin")
NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]
# No shrinking: an example costs seconds (a drain, a crawl), and a failure names its page.
CRAWL = {"deadline": None, "database": None, "max_examples": 20, "phases": NO_SHRINK,
         "suppress_health_check": list(HealthCheck)}  # fmt: skip
CRAWL_LIMIT = 60  # pages per role and example, beyond the hostile messages' own
PER_SHAPE = 2  # pages of one kind (the same path but for ids, the same query names)
SKIPPED = ("/static/", "/api/", "/admin/", "/logout", "/login", "/oidc/")
LINK = re.compile(r'\s(?:href|hx-get)="([^"]*)"')
# What no page may write as it is (a textarea, or an input's value, holds the text as typed).
HIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
AS_TYPED = re.compile(r'<textarea[^>]*>.*?</textarea>|\svalue="[^"]*"', re.S)


def _longstr(text: str) -> dict:
    return {"type": "longstr", "value": text}


# The broker refuses a delivery mode other than 1 and 2 (PRECONDITION_FAILED): the rest of
# the properties as the wire allows them.
wire_properties = st.tuples(property_sets, st.sampled_from([None, 1, 2])).map(
    lambda pair: (
        {k: v for k, v in pair[0].items() if k != "delivery_mode"}
        | ({"delivery_mode": pair[1]} if pair[1] else {})
    )
)
hostile_messages = st.fixed_dictionaries(
    {
        "headers": tables,
        "body": st.binary(max_size=300),
        "properties": wire_properties,
        "routing_key": spoofing_text,
        "message_type": spoofing_text,
        "exception": spoofing_text,
    }
)


@pytest.fixture
def estate(channel, top, started):
    """A fanout exchange into a work queue that dead-letters into a parking queue, every name
    hostile; jobs made on the pages are never started (`started`)."""
    park, dlx = top.parking(f"dlq{SPOOFING[1:16]}<b>&")
    work = top.queue("work\u202eexe\u05d0", **{"x-dead-letter-exchange": dlx})
    inbound = top.exchange("in\x01\u202e<i>", "fanout")
    channel.queue_bind(work, inbound)
    return {"park": park, "work": work, "inbound": inbound}


@pytest.fixture
def clients():
    return {role: client_for(make_user(role)) for role in ROLES}


def drained(channel, estate, batch: list[dict]) -> list[Message]:
    """`batch` published, rejected by the work queue's consumer and drained: the new rows."""
    last = Message.objects.order_by("-id").values_list("id", flat=True).first() or 0
    for m in batch:
        headers = typed_headers(m["headers"]) | {
            "MT-Fault-MessageType": _longstr(m["message_type"]),
            "MT-Fault-ExceptionType": _longstr(m["exception"]),
            "MT-Fault-Message": _longstr(m["exception"]),
        }
        props = amqp.make_properties(m["properties"], headers)
        channel.basic_publish(estate["inbound"], m["routing_key"], m["body"], props)
        reject(channel, estate["work"])
    drain_once([estate["park"]])
    rows = list(Message.objects.filter(pk__gt=last).order_by("id"))
    assert len(rows) == len(batch)
    return rows


def fetch(client, url: str) -> str | None:
    """A GET that must not fail: the page's HTML, or None for a download."""
    response = client.get(url)
    assert response.status_code < 500, (url, response.status_code)
    content = b"".join(response.streaming_content) if response.streaming else response.content
    kind = response.get("Content-Type", "")
    if not kind.startswith("text/"):
        return None  # the raw body: its bytes, as a download
    text = content.decode("utf-8")  # every page and the CSV are UTF-8, whatever they show
    if not kind.startswith("text/html"):
        return None
    shown = AS_TYPED.sub("", text)
    hidden = HIDDEN.search(shown)
    assert hidden is None, (url, shown[max(0, hidden.start() - 80) : hidden.end() + 40])
    return text


def _shape(url: str) -> str:
    parts = urlsplit(url)
    names = sorted({pair.split("=")[0] for pair in parts.query.split("&") if pair})
    return re.sub(r"\d+", "N", parts.path) + "?" + "&".join(names)


def crawl(client, limit: int = CRAWL_LIMIT) -> set[str]:
    """Every same-origin link and htmx GET from `/`, breadth first, a few pages of each kind,
    at most `limit` pages: the URLs visited."""
    seen, shapes, queue = set(), {}, ["/"]
    while queue and len(seen) < limit:
        url = queue.pop(0)
        if url in seen or shapes.get(_shape(url), 0) >= PER_SHAPE:
            continue
        seen.add(url)
        shapes[_shape(url)] = shapes.get(_shape(url), 0) + 1
        markup = fetch(client, url)
        for link in LINK.findall(markup or ""):
            target = urlsplit(urljoin(url, html.unescape(link)))
            if target.scheme or target.netloc or target.path.startswith(SKIPPED):
                continue
            queue.append(target.path + (f"?{target.query}" if target.query else ""))
    return seen


def pages_of(m: Message) -> list[str]:
    """The pages of one message, and the pages its values lead to."""
    custom = {"replay-target": "custom", "replay-exchange": m.exchange,
              "replay-routing_key": m.routing_key}  # fmt: skip
    filters = {"queue": m.queue, "exchange": m.original_exchange or "",
               "routing_key": m.routing_key, "message_type": m.message_type,
               "exception_type": m.exception_type, "reason": m.death_reason}  # fmt: skip
    return [
        f"/messages/{m.pk}/",
        f"/messages/{m.pk}/raw/",
        f"/messages/{m.pk}/route/?replay-target=original",
        f"/messages/{m.pk}/route/?replay-target=failed_queue",
        f"/messages/{m.pk}/route/?{urlencode(custom)}",
        f"/messages/?{urlencode(filters)}",
        f"/messages/count/?{urlencode(filters)}",
        f"/groups/?{urlencode({'queue': m.queue, 'message_type': m.message_type})}",
        f"/bulk/review/?action=replay&id={m.pk}",
        f"/bulk/review/?action=discard&all=1&{urlencode({'queue': m.queue})}",
        f"/audit/?message={m.pk}",
        f"/audit/?message={m.pk}&format=csv",
    ]


def edit_form(markup: str) -> dict:
    """The edit form's fields as the page fills them in (a textarea's first line end is the
    markup's, as a browser reads it)."""
    form = {}
    for name in ("body", "headers", "properties"):
        found = re.search(rf'<textarea name="edit-{name}"[^>]*>\n?(.*?)</textarea>', markup, re.S)
        if found:
            form[f"edit-{name}"] = html.unescape(found.group(1))
    chosen = re.search(
        r'name="edit-body_format".*?<option value="(\w+)"[^>]*selected', markup, re.S
    )
    if chosen:
        form["edit-body_format"] = chosen.group(1)
    return form | header_rows(markup)


def header_rows(markup: str) -> dict:
    """The header rows as a browser sends them: each input's value (an <input> drops CR and
    LF), each select's chosen type; a checkbox left unchecked is not sent."""
    inputs = r'<input type="(?:hidden|text)" name="(edit-(?:rows|h-\d+-\w+))" value="([^"]*)"'
    rows = {
        name: html.unescape(value).replace("\r", "").replace("\n", "")
        for name, value in re.findall(inputs, markup)
    }
    for name, options in re.findall(r'<select name="(edit-h-\d+-type)"[^>]*>(.*?)</select>',
                                    markup, re.S):  # fmt: skip
        rows[name] = re.search(r'<option value="(\w+)" selected', options).group(1)
    return rows


def _exactly(m: Message) -> tuple:
    return bytes(m.body), m.headers, m.properties


def round_trip(operator, m: Message, reason: str) -> None:
    """The edit form saved as shown changes nothing; saved with one header added, it keeps
    every other name and value exactly (names that are not UTF-8 too)."""
    before = _exactly(m)
    form = edit_form(fetch(operator, f"/messages/{m.pk}/"))
    assert json.loads(form["edit-headers"])  # the page shows them as strict JSON
    url = f"/messages/{m.pk}/edit/"
    response = post(operator, url, {**form, "edit-reason": reason or "as shown"})
    assert response.status_code < 500
    assert _exactly(Message.objects.get(pk=m.pk)) == before

    added = {**json.loads(form["edit-headers"]), "dlq-test-added": _longstr("x")}
    data = {**form, "edit-headers": json.dumps(added), "edit-reason": reason or "one more"}
    response = post(operator, url, data)
    assert response.status_code < 500
    after = Message.objects.get(pk=m.pk)
    if response.status_code == 302:  # saved
        assert _exactly(after) == (before[0], {**before[1], **{"dlq-test-added": _longstr("x")}},
                                   before[2])  # fmt: skip
    else:  # refused (a property the form cannot take, such as delivery mode 7): untouched
        assert _exactly(after) == before
        return

    # One header more as a row, the other rows and the JSON as the page shows them.
    form = edit_form(fetch(operator, f"/messages/{m.pk}/"))
    new = len([k for k in form if k.endswith("-was")])  # past the blank row
    added_row = {f"edit-h-{new}-name": "dlq-test-row", f"edit-h-{new}-type": "longstr",
                 f"edit-h-{new}-value": "y", "edit-reason": reason or "a row more"}  # fmt: skip
    assert post(operator, url, {**form, **added_row}).status_code == 302
    assert _exactly(Message.objects.get(pk=m.pk)) == (
        before[0], {**before[1], "dlq-test-added": _longstr("x"), "dlq-test-row": _longstr("y")},
        before[2])  # fmt: skip


@given(batch=st.lists(hostile_messages, min_size=1, max_size=3), reason=spoofing_text)
@settings(**CRAWL)
def test_every_page_shows_hostile_messages_to_every_role(channel, estate, clients, batch,
                                                         reason):  # fmt: skip
    rows = drained(channel, estate, batch)
    operator = make_user("operator")
    kept = reason.replace("\x00", "").strip() or "hostile"  # as the pages take a reason
    control.create_job(operator, "discard", ids=[m.pk for m in rows], reason=kept)
    for m in rows:
        round_trip(clients["operator"], m, reason)
    for role, client in clients.items():
        for m in rows:
            for url in pages_of(m):
                fetch(client, url)
        visited = crawl(client)
        assert {"/", "/messages/", "/groups/", "/jobs/", "/audit/"} <= visited, role
        assert any(url.startswith("/jobs/") and url != "/jobs/" for url in visited), role
        if role != "viewer":
            assert any(url.startswith("/bulk/review/") for url in visited), role
