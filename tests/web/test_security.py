"""Every page of the console at its security edges, found from the URL configuration so a new
page is covered without a new test: anonymous users go to the login page, a viewer's POST is
refused whatever the URL, every POST needs the CSRF token and every post form carries it,
every response carries the Content-Security-Policy, the raw body is a download the browser
never renders, and the login page does not redirect off the site."""

import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from dlq.models import Message, Status
from dlq.models.actions import AuditEntry
from tests import ROOT
from tests.factories import client_for, make_message, make_user, post
from tests.uiops import a_job, body

pytestmark = pytest.mark.django_db

TEMPLATES = ROOT / "templates"
# Django's and ninja's, and the machine endpoints (probes answer anyone; /metrics takes a
# token or an allowed address; a chat's integration only a signature), and the favicon (a
# static file for anyone): tested in test_api_*, test_health_probes, test_metrics,
# tests/alerts/slack/, test_error_pages.
NOT_PAGES = ("admin/", "api/", "login/", "logout/", "healthz", "readyz", "metrics",
             "integrations/", "favicon.ico")  # fmt: skip
PASSWORD = "a-long-test-password"


def _routes(patterns, prefix: str = ""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            yield route


def page_urls(pk: int) -> list[str]:
    """Every console URL, with `pk` for each id (the role check comes before any lookup)."""
    routes = [r for r in _routes(get_resolver().url_patterns) if not r.startswith(NOT_PAGES)]
    return ["/" + re.sub(r"<int:\w+>", str(pk), re.sub(r"<str:\w+>", "slack", r)) for r in routes]


def action_urls(pk: int) -> list[str]:
    """The URLs that take a POST at all (the others answer 405)."""
    operator = client_for(make_user("admin"))
    return [url for url in page_urls(pk) if post(operator, url).status_code != 405]


@pytest.fixture
def message():
    return make_message(queue="security.dlq")


def test_it_knows_the_pages():
    urls = page_urls(7)
    assert {"/", "/messages/", "/messages/7/replay/", "/bulk/review/", "/jobs/7/cancel/"} <= set(
        urls
    )
    assert "/alerts/mutes/add/" in urls and not any(u.startswith("/api/") for u in urls)


def test_anonymous_users_only_ever_reach_the_login_page(message):
    client = Client()
    for url in page_urls(message.pk):
        response = client.get(url)
        if response.status_code != 405:  # a POST-only action
            assert response["Location"].startswith("/login/?next="), url
    for url in action_urls(message.pk):
        response = client.post(url, {"reason": "forged"})
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url


@pytest.mark.parametrize(
    ("page", "back"),
    [("http://testserver/messages/?q=x", "/messages/%3Fq%3Dx"), ("https://evil.example/", "/"),
     ("http://testserver//evil.example/", "/")],
)  # fmt: skip
def test_an_htmx_request_without_a_session_sends_the_whole_page_to_login(page, back):
    headers = {"HX-Request": "true", "HX-Current-URL": page}
    response = Client().get("/messages/count/", headers=headers)
    assert response.status_code == 200 and response.content == b""
    assert response["HX-Redirect"] == f"/login/?next={back}"


def test_a_viewer_can_post_nothing_anywhere(message):
    job = a_job([message.pk])
    viewer = client_for(make_user("viewer"))
    for url in page_urls(message.pk):
        if url.startswith("/tokens/"):
            continue  # anyone may revoke their own API token: tests/test_tokens.py
        if url.startswith("/account/"):
            continue  # anyone links and unlinks their own chat users: tests/web/test_account.py
        data = {"reason": "forged", "discard-reason": "forged", "replay-target": "original"}
        status = post(viewer, url, data).status_code
        assert status in (403, 405), url
    job.refresh_from_db()
    assert (job.status, job.cancel_requested) == ("pending", False)
    assert Message.objects.get(pk=message.pk).status == Status.PARKED
    assert not AuditEntry.objects.exclude(job_id=job.pk).exists()


def test_every_post_without_the_csrf_token_is_refused(message):
    operator = make_user("admin", password=PASSWORD)
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    for url in action_urls(message.pk):
        response = client.post(url, {"reason": "forged"})
        assert response.status_code == 403 and b"CSRF" in response.content, url
    assert Message.objects.get(pk=message.pk).status == Status.PARKED


def test_every_post_form_carries_the_csrf_token(message):
    a_job([message.pk])
    discarded = make_message(queue="security.dlq")
    Message.objects.filter(pk=discarded.pk).update(status=Status.DISCARDED)
    admin = client_for(make_user("admin"))
    pages = [u for u in page_urls(message.pk) if admin.get(u).status_code == 200]
    pages += [f"/messages/{discarded.pk}/", "/bulk/review/?action=replay&all=1"]
    forms = 0
    for url in pages:
        for form in body(admin.get(url)).split("<form")[1:]:
            form = form.split("</form>", 1)[0]
            if re.match(r'[^>]*method="post"', form):
                forms += 1
                assert 'name="csrfmiddlewaretoken"' in form, (url, form[:200])
    assert forms > 10  # the test saw the operator's forms


def test_every_response_carries_the_content_security_policy(message):
    viewer = client_for(make_user("viewer"))
    for response in (viewer.get("/"), viewer.get(f"/messages/{message.pk}/"),
                     viewer.get("/messages/999999/"), Client().get("/login/"),
                     viewer.get("/bulk/review/?action=replay&all=1")):  # fmt: skip
        policy = response["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


def test_the_raw_body_is_a_download_never_rendered_as_html():
    html = b"<html><script>alert(1)</script></html>"
    message = make_message(body=html, content_type="text/html")
    response = client_for(make_user("viewer")).get(f"/messages/{message.pk}/raw/")
    assert response.status_code == 200 and response.content == html
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/", "/\\evil.example"])
def test_the_login_page_never_redirects_off_the_site(target):
    user = make_user("viewer", password=PASSWORD)
    page = Client().get(f"/login/?next={target}")
    assert target not in body(page)  # the form does not carry it on either
    response = Client().post(
        f"/login/?next={target}", {"username": user.username, "password": PASSWORD}
    )
    assert response.status_code == 302 and response["Location"] == "/"


def test_logging_out_goes_to_the_login_page_and_never_off_the_site():
    client = client_for(make_user("viewer"))
    response = post(client, "/logout/?next=https://evil.example/")
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert client.get("/").status_code == 302


def test_templates_have_no_inline_script_handler_or_unescaped_output():
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), path
        assert not re.search(r"\son[a-z]+\s*=", text), path
        assert not re.search(r"\sstyle\s*=", text), path
        assert "|safe" not in text and "autoescape off" not in text, path
