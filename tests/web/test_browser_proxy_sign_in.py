"""Signing in behind a company sign-in gateway (tests/authgateway.py, the way oauth2-proxy
works, itself signing in at the real local provider), walked in headless Chromium: the role
from the provider's groups, a user with no mapped group refused, and the same headers sent
straight to the console, not through the gateway, ignored."""

import ipaddress
import json

import pytest

from dlq.models import AuditEntry, Identity
from tests.authgateway import GROUPS_HEADER, USER_HEADER
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "idp-password-1"


@pytest.fixture(autouse=True)
def behind_the_gateway(settings):
    settings.DLQ_AUTH_PROXY_USER_HEADER = "HTTP_X_FORWARDED_USER"
    settings.DLQ_AUTH_PROXY_GROUPS_HEADER = "HTTP_X_FORWARDED_GROUPS"
    settings.DLQ_AUTH_PROXY_ROLE_MAP = {"dlq-operators": "operator", "platform": "admin"}
    settings.DLQ_AUTH_PROXY_NETS = [ipaddress.ip_network("127.0.0.2/32")]


def through_the_gateway(page, gateway, username: str, path: str = "/") -> None:
    page.goto(f"{gateway.url}{path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def test_the_gateway_signs_a_user_in_with_the_role_of_their_groups(gateway, idp, page,
                                                                   live_server):  # fmt: skip
    idp.add_user("grace", PASSWORD, "Grace", "grace@example.com", ["dlq-operators", "staff"])
    through_the_gateway(page, gateway, "grace", "/messages/")

    page.wait_for_url(f"{gateway.url}/messages/")
    assert page.locator(".who .role").inner_text() == "operator"
    assert page.locator(".who span").first.inner_text() == "grace"
    entry = AuditEntry.objects.get()
    assert entry.action == "sign_in" and json.loads(entry.detail)["address"] == "127.0.0.2"

    page.goto(f"{live_server.url}/messages/")  # the same browser, around the gateway
    assert page.url.startswith(f"{live_server.url}/login/")


def test_a_user_with_no_mapped_group_is_refused(gateway, idp, page):
    idp.add_user("rex", PASSWORD, "Rex", "rex@example.com", ["staff"])
    with page.expect_response(lambda r: r.url == f"{gateway.url}/" and r.status != 302) as answer:
        through_the_gateway(page, gateway, "rex")
    assert answer.value.status == 403
    assert page.get_by_role("heading").inner_text() == "No access to DLQ Console"
    assert page.locator("ul.groups li").all_inner_texts() == ["staff"]


def test_the_headers_sent_straight_to_the_console_are_ignored(page, live_server):
    local_admin = make_user("admin")
    page.set_extra_http_headers({USER_HEADER: local_admin.username, GROUPS_HEADER: "platform"})
    page.goto(f"{live_server.url}/")
    assert page.url.startswith(f"{live_server.url}/login/")
    assert not Identity.objects.exists() and not AuditEntry.objects.exists()
