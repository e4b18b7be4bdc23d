"""The bulk review page: it shows what a job would touch (count, sample, route preview),
refuses bad selections, targets and confirmations with clear errors (never a 500), and a
confirmed POST creates the job through control.create_job and hands it to a worker."""

import html
import json
import re
from urllib.parse import quote, urlencode

import pytest

from dlq.jobs import running
from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Job
from tests.factories import make_messages, post
from tests.uiops import REPLAY_FAILING, body, review_url

pytestmark = pytest.mark.django_db


def replay_to(target: str, **fields) -> dict:
    """The target fields of the bulk review, prefixed as the page names them."""
    return {f"replay-{k}": v for k, v in {"target": target, **fields}.items()}


def words(text: str) -> str:
    """The page's text as read: no tags (names may wrap at their dots: <wbr>)."""
    return re.sub(r"<[^>]+>", "", text)


def test_it_reviews_a_group_with_count_sample_and_route(operator, top):
    work, other = top.queue("work"), top.queue("other")
    fan = top.exchange("fan", "fanout")
    top.ch.queue_bind(work, fan)
    top.ch.queue_bind(other, fan)
    messages = make_messages(12, queue=top.name("dlq"), died_in=work, exchange=fan)
    make_messages(2, queue=top.name("dlq"), died_in=work, exchange=fan, reason="expired")

    response = operator.get(review_url("replay", all=1, group=messages[0].group))

    assert response.status_code == 200
    text = body(response)
    # The selection in words, the group by its name (issue 26, point 4), not its hash.
    assert f"Replay 12 parked messages of rejected in {work} received before " in words(text)
    # The raw filter stays, folded away.
    assert f"<code>group</code> = <code>{messages[0].group}</code>" in text
    assert len(re.findall(r'href="/messages/\d+/"', text)) == 10  # the sample: the newest ten
    assert f'href="/messages/{messages[-1].pk}/"' in text
    assert f'href="/messages/{messages[0].pk}/"' not in text
    assert f"→ <code>{other}</code>, <code>{work}</code>" in text  # the route preview
    assert "Fan-out: at least one message would reach several queues" in text
    assert "Replay 12 messages" in text
    assert f'<a href="/messages/?group={messages[0].group}">Cancel</a>' in text


def test_it_previews_a_custom_target_and_an_unknown_exchange(operator, top):
    work = top.queue("work")
    messages = make_messages(2, queue=top.name("dlq"), died_in=work)
    url = review_url("replay", id=messages[0].pk, **replay_to("custom", exchange="",
                                                             routing_key=work))  # fmt: skip
    assert f"→ <code>{work}</code>" in body(operator.get(url))

    missing = top.name("missing")
    url = review_url("replay", id=messages[0].pk, **replay_to("custom", exchange=missing,
                                                             routing_key="k"))  # fmt: skip
    assert f"exchange &#x27;{missing}&#x27; does not exist: replay would fail" in body(
        operator.get(url)
    )


def test_a_discard_review_counts_only_parked_messages(operator):
    first, second, third = make_messages(3)
    Message.objects.filter(pk=third.pk).update(status=Status.DISCARDED)
    url = review_url("discard", id=first.pk) + f"&id={second.pk}&id={third.pk}"
    text = body(operator.get(url))
    assert "Discard 2 chosen parked messages." in words(text)
    assert "1 of the chosen messages are not parked" in text
    assert "Route now" not in text and "Discard 2 messages" in text


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("", "<code>action</code>: must be one of replay, discard"),
        ("action=delete&id=1", "<code>action</code>: must be one of replay, discard"),
        ("action=discard", "<code>id</code>: choose messages"),
        ("action=discard&id=1&all=1", "give either message ids or all=1"),
        ("action=discard&id=x", "message ids are positive whole numbers"),
        ("action=discard&id=0", "message ids are positive whole numbers"),
        ("action=discard&id=%C2%B2", "message ids are positive whole numbers"),  # "²"
        ("action=discard&all=yes", "<code>all</code>: must be 1"),
        ("action=discard&all=1&status=lost", "<code>status</code>: must be one of"),
        ("action=discard&all=1&received_after=yesterday", "must be an ISO 8601 date-time"),
        ("action=discard&all=1&queue=a%00b", "must not contain NUL characters"),
        ("action=discard&all=1&q=" + "x" * 201, "must be at most 200 characters"),
    ],
)
def test_it_refuses_a_bad_selection_with_a_clear_error(operator, query, error):
    response = operator.get(f"/bulk/review/?{query}")
    assert response.status_code == 400
    assert error in body(response)
    assert "Confirm" not in body(response)


def test_it_refuses_a_bad_target_on_review_and_on_confirm(operator, started):
    message = make_messages(1)[0]
    long = "x" * 256
    bad = [
        (replay_to("sideways"), "Select a valid choice"),
        (replay_to("custom", exchange=long, routing_key="k"),
         "Ensure this value has at most 255 characters"),
        (replay_to("original", exchange="x"),
         "exchange and routing key apply to a custom target only"),
    ]  # fmt: skip
    confirm = review_url("replay", id=message.pk)
    for target, error in bad:
        review = review_url("replay", id=message.pk, **{k: quote(v) for k, v in target.items()})
        assert operator.get(review).status_code == 400
        assert error in body(operator.get(review))
        response = post(operator, confirm, {**target, "reason": "fix"})
        assert response.status_code == 400 and error in body(response)
    # A confirmation names its target, under the page's own name for it.
    for missing in ({}, {"target": "failed_queue"}):
        response = post(operator, confirm, {**missing, "reason": "fix"})
        assert response.status_code == 400
        assert "target: This field is required." in body(response)
    assert not Job.objects.exists() and started == []


def test_the_confirmation_replays_to_the_posted_target_not_the_first_loaded_one(operator, started):
    """The page was first loaded with "original" (its address says so); the operator chose
    the failed queue on the page and confirmed without a preview."""
    message = make_messages(1)[0]
    first_loaded = review_url("replay", id=message.pk, **replay_to("original"))
    review = body(operator.get(first_loaded))
    assert "Replay 1 message to the original destination</button>" in review
    confirm = html.unescape(re.search(r'action="(/bulk/review/\?[^"]+)"', review)[1])
    assert "target" not in confirm  # no copy of the first target to disagree with the radios

    # (none of these routes exists on the broker: the second confirmation is ticked)
    response = post(operator, first_loaded, {**replay_to("failed_queue"), "reason": "fixed",
                                             **REPLAY_FAILING})  # fmt: skip

    assert response.status_code == 302
    job = Job.objects.get()
    assert job.target == "failed_queue"
    audited = json.loads(AuditEntry.objects.get(action="job_create").detail)
    assert audited["target"] == "failed_queue"


@pytest.mark.parametrize(
    ("target", "words"),
    [
        (replay_to("original"), "Replay 2 messages to the original destination"),
        (replay_to("failed_queue"), "Replay 2 messages to the failed queue"),
        (replay_to("custom", exchange="billing", routing_key="invoice.retry"),
         "Replay 2 messages to exchange billing with routing key invoice.retry"),
        (replay_to("custom", exchange="", routing_key="work"),
         "Replay 2 messages to the default exchange with routing key work"),
    ],
)  # fmt: skip
def test_the_button_says_where_the_messages_go(operator, target, words):
    ids = [m.pk for m in make_messages(2)]
    url = review_url("replay", id=ids[0]) + f"&id={ids[1]}"
    preview = post(operator, url, {**target, "preview": "1", "reason": "typed first"})
    assert preview.status_code == 200 and not Job.objects.exists()
    assert f"{words}</button>" in body(preview)
    assert "typed first</textarea>" in body(preview)  # a preview keeps what was typed
    fragment = operator.get(url + "&" + urlencode(target), headers={"HX-Request": "true"})
    assert f'hx-swap-oob="innerHTML:#confirm-action"><button type="submit">{words}</button>' in (
        body(fragment)
    )
    assert "<html" not in body(fragment)  # only what the target changes


def test_it_requires_a_reason_and_a_sane_rate(operator, started):
    url = review_url("replay", id=make_messages(1)[0].pk)
    bad = [
        ({"reason": "  "}, "This field is required."),
        ({"reason": "r", "rate_per_s": "0"}, "greater than or equal to 1"),
        ({"reason": "r", "rate_per_s": "fast"}, "Enter a whole number."),
    ]
    for data, error in bad:
        response = post(operator, url, {**replay_to("failed_queue"), **data})
        assert response.status_code == 400 and error in body(response)
    assert not Job.objects.exists() and started == []


def test_it_refuses_to_confirm_an_empty_selection(operator, started):
    """A filter that matches nothing, or ids none of which is parked: the same refusal as
    the API's (control.create_job makes it)."""
    replayed = make_messages(1)[0]
    Message.objects.filter(pk=replayed.pk).update(status=Status.REPLAYED)
    for selection, field in [
        (review_url("discard", all=1, queue="nothing.here"), "filter"),
        (review_url("discard", id=987654321), "ids"),
        (review_url("discard", id=replayed.pk), "ids"),
    ]:
        response = post(operator, selection, {"reason": "r"})
        assert response.status_code == 400
        assert f"{field}: no parked message is selected: nothing to do" in body(response)
    assert not Job.objects.exists() and started == []


@pytest.mark.django_db(transaction=True)  # the job runs with several connections
def test_a_confirmed_discard_creates_audits_and_starts_the_job(operator, started):
    make_messages(3, queue="bulk.dlq")
    make_messages(1, queue="other.dlq")
    url = review_url("discard", all=1, queue="bulk.dlq")
    review = body(operator.get(url))
    confirm = html.unescape(re.search(r'action="(/bulk/review/\?[^"]+)"', review)[1])
    assert "received_before=" in confirm  # the review's instant bounds the selection

    response = post(operator, confirm, {"reason": "junk"})

    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert (job.action, job.total, job.reason, started) == ("discard", 3, "junk", [job.pk])
    assert job.created_by.startswith("operator-")
    entry = AuditEntry.objects.get(action="job_create")
    assert entry.job_id == job.pk and entry.reason == "junk"
    assert running.run_job(job.pk) == "done"
    assert Message.objects.filter(status=Status.DISCARDED).count() == 3
    page = body(operator.get(f"/jobs/{job.pk}/"))
    assert "3 of 3 settled (3 done, 0 failed)" in page and "<td>discarded</td>" in page


def test_a_confirmed_replay_keeps_the_reviewed_target_and_rate(
    operator, started, django_capture_on_commit_callbacks
):
    messages = make_messages(2)
    url = review_url("replay", id=messages[0].pk) + f"&id={messages[1].pk}"
    target = replay_to("custom", exchange="", routing_key="some.queue")
    with django_capture_on_commit_callbacks(execute=True):
        response = post(operator, url, {**target, "reason": "r", "rate_per_s": 5, **REPLAY_FAILING})
    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.target, job.rate_per_s, job.total) == (
        {"exchange": "", "routing_key": "some.queue"}, 5, 2,
    )  # fmt: skip


def test_a_custom_targets_exchange_is_not_read_as_a_filter(operator, started):
    """The list's filters name the selection in the same query string, and have an
    `exchange` and a `routing_key` of their own: a custom target's must not narrow it."""
    make_messages(3, queue="bulk.dlq", exchange="orders.events", routing_key="order.created")
    url = review_url("replay", all=1, queue="bulk.dlq")
    target = replay_to("custom", exchange="billing", routing_key="invoice.retry")

    review = operator.get(f"{url}&{urlencode(target)}", headers={"HX-Request": "true"})
    response = post(operator, url, {**target, "reason": "r", **REPLAY_FAILING})

    assert "Sample: the newest 3 of 3" in body(review)
    job = Job.objects.get()
    assert response.status_code == 302 and job.total == 3
    assert json.loads(job.filter_json).keys() == {"queue", "received_before"}


def test_it_reviews_without_the_management_api(operator, settings):
    settings.DLQ_MANAGEMENT_URL = "http://guest:guest@127.0.0.1:9"  # nothing listens there
    make_messages(5, queue="orders.dlq")

    response = operator.get(review_url("replay", all=1, queue="orders.dlq"))

    assert response.status_code == 200
    text = body(response)
    assert "Replay 5 parked messages in orders.dlq received before " in words(text)
    assert text.count("→ unknown") == 5
    assert text.count("route unknown: management API unreachable") == 5
    assert "Replay 5 messages" in text
