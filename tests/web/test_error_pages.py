"""The edges of the console: 403, 404 and 500 pages styled like it, with the navigation and
the request id; a message that is gone says so and links what the audit kept of it;
/favicon.ico answers; /drainers/ opened directly is a whole page."""

import logging

import pytest
from django.test import Client

from dlq.actions import message as message_actions
from dlq.models import Message
from tests.factories import client_for, make_messages, make_user
from tests.uiops import body

pytestmark = pytest.mark.django_db

NAV = '<nav aria-label="Main">'


def test_an_unknown_page_is_a_styled_404_with_the_navigation_and_request_id():
    viewer = client_for(make_user("viewer"))
    missing = viewer.get("/no/such/<b>page</b>", headers={"X-Request-ID": "req-404-abc"})
    text = body(missing)
    assert missing.status_code == 404 and missing["X-Request-ID"] == "req-404-abc"
    assert NAV in text and "console.css" in text and "<h1>Not found</h1>" in text
    assert "Request id: <code>req-404-abc</code>" in text
    assert "<b>page</b>" not in text  # the path is shown escaped


def test_anonymous_readers_get_the_404_without_the_navigation():
    missing = Client().get("/no/such/page")
    assert missing.status_code == 404 and NAV not in body(missing)
    assert "Request id: <code>" in body(missing)


def test_a_purged_message_says_it_is_gone_and_links_its_audit():
    operator = make_user("operator")
    [message] = make_messages(1)
    message_actions.discard(message.pk, operator, "bad data")
    Message.objects.filter(pk=message.pk).delete()  # as retention purges it

    gone = client_for(make_user("viewer")).get(f"/messages/{message.pk}/")
    text = body(gone)
    assert gone.status_code == 404 and NAV in text
    assert f"Message {message.pk} no longer exists" in text
    assert f'href="/audit/?message={message.pk}"' in text
    audit = client_for(make_user("viewer")).get(f"/audit/?message={message.pk}")
    assert "bad data" in body(audit)  # the link leads to what the trail kept


def test_a_role_refusal_is_a_403_page_with_the_role_and_request_id():
    refused = client_for(make_user("viewer")).get("/users/", headers={"X-Request-ID": "r-403"})
    text = body(refused)
    assert refused.status_code == 403 and NAV in text
    assert "this needs the admin role" in text and "You are signed in as viewer." in text
    assert "Request id: <code>r-403</code>" in text


@pytest.fixture
def failing_view(settings):
    settings.ROOT_URLCONF = "tests.web.boomurls"


def test_a_server_error_is_a_styled_500_with_the_request_id_in_the_log(failing_view, caplog):
    viewer = client_for(make_user("viewer"))
    viewer.raise_request_exception = False
    with caplog.at_level(logging.ERROR, logger="dlq.web.errors"):
        failed = viewer.get("/boom/", headers={"X-Request-ID": "req-500-xyz"})
    text = body(failed)
    assert failed.status_code == 500 and failed["X-Request-ID"] == "req-500-xyz"
    assert NAV in text and "<h1>Server error</h1>" in text
    assert "Request id: <code>req-500-xyz</code>" in text
    assert "the test&#x27;s own failure" not in text and "the test's own failure" not in text
    [line] = [r for r in caplog.records if r.name == "dlq.web.errors"]
    assert line.request_id == "req-500-xyz" and "the test's own failure" in line.error


def test_the_500_page_still_answers_when_the_styled_one_cannot_render(failing_view, settings):
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "OPTIONS": {
        **settings.TEMPLATES[0]["OPTIONS"],
        "context_processors": ["tests.web.test_error_pages.broken_processor"]}}]  # fmt: skip
    anonymous = Client(raise_request_exception=False)
    failed = anonymous.get("/boom/", headers={"X-Request-ID": "bare-1"})
    assert failed.status_code == 500 and "Request id: <code>bare-1</code>" in body(failed)


def broken_processor(request):
    raise RuntimeError("the database is down")


def test_the_favicon_is_linked_and_favicon_ico_answers():
    page = body(Client().get("/login/"))
    assert '<link rel="icon" href="/static/dlq/favicon.svg" type="image/svg+xml">' in page
    ico = Client().get("/favicon.ico", follow=True)
    assert ico.status_code == 200 and ico.redirect_chain[0][0] == "/static/dlq/favicon.svg"
    assert b"<svg" in b"".join(ico.streaming_content)


def test_drainers_opened_directly_is_a_whole_page_and_a_fragment_for_htmx():
    viewer = client_for(make_user("viewer"))
    whole = viewer.get("/drainers/")
    assert NAV in body(whole) and "<h1>Drainers</h1>" in body(whole)
    assert "HX-Request" in whole["Vary"]
    fragment = viewer.get("/drainers/", headers={"HX-Request": "true"})
    assert body(fragment).lstrip().startswith('<section class="drainers"')
    assert NAV not in body(fragment)
