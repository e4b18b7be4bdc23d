"""DLQ_OIDC_ROLE_MAP / DLQ_AUTH_PROXY_ROLE_MAP: GROUP=ROLE items, the highest role wins,
junk stops the start-up naming the variable."""

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from console.env import env_header, env_role_map
from dlq.accounts.rolemap import groups_from, parse, role_for
from tests import ROOT


def test_items_map_groups_to_roles_and_the_highest_wins():
    mapping = parse(" dlq-viewers=viewer, dlq-ops = operator ,platform=admin")
    assert mapping == {"dlq-viewers": "viewer", "dlq-ops": "operator", "platform": "admin"}
    assert role_for(["dlq-viewers", "dlq-ops", "other"], mapping) == "operator"
    assert role_for(["platform", "dlq-viewers"], mapping) == "admin"
    assert role_for(["other", "DLQ-OPS"], mapping) is None  # exact names, case included


def test_a_group_may_hold_equals_signs_and_escaped_commas_like_an_ldap_dn():
    mapping = parse(r"cn=admin\,ou=groups\,dc=example=operator,/dlq/admins=admin")
    assert mapping == {"cn=admin,ou=groups,dc=example": "operator", "/dlq/admins": "admin"}
    assert role_for(["cn=admin,ou=groups,dc=example"], mapping) == "operator"


def test_an_unescaped_dn_is_an_error_not_a_group_named_cn():
    with pytest.raises(ValueError, match="'ou=groups' is not GROUP=ROLE"):
        parse("cn=admin,ou=groups,dc=example=operator")


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("ops=superuser", "not GROUP=ROLE"),
        ("ops", "not GROUP=ROLE"),
        ("=admin", "no group"),
        ("ops=viewer,ops=admin", "both viewer and admin"),
        ("ops=admin,", "empty item"),
        ("ops=admin,,dev=viewer", "empty item"),
    ],
)
def test_junk_is_a_start_up_error_naming_the_variable(monkeypatch, value, complaint):
    monkeypatch.setenv("DLQ_OIDC_ROLE_MAP", value)
    with pytest.raises(ImproperlyConfigured, match=complaint) as raised:
        env_role_map("DLQ_OIDC_ROLE_MAP")
    assert str(raised.value).startswith("DLQ_OIDC_ROLE_MAP: ")


def test_a_groups_claim_is_a_list_of_names_or_one_name_and_nothing_else():
    assert groups_from(["a", 3, None, "", {"b": 1}, "c"]) == ["a", "c"]
    assert groups_from("ops") == ["ops"]
    assert groups_from({"ops": True}) == [] and groups_from(None) == []


def test_a_header_variable_is_a_header_name(monkeypatch):
    monkeypatch.setenv("DLQ_AUTH_PROXY_USER_HEADER", "X-Forwarded-User")
    assert env_header("DLQ_AUTH_PROXY_USER_HEADER") == "HTTP_X_FORWARDED_USER"
    monkeypatch.setenv("DLQ_AUTH_PROXY_USER_HEADER", "X Forwarded: User")
    with pytest.raises(ImproperlyConfigured, match="DLQ_AUTH_PROXY_USER_HEADER"):
        env_header("DLQ_AUTH_PROXY_USER_HEADER")


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        ({"DLQ_OIDC_DISCOVERY_URL": "https://idp.example/.well-known/openid-configuration",
          "DLQ_OIDC_CLIENT_ID": "dlq", "DLQ_OIDC_ROLE_MAP": "ops=admin"},
         "DLQ_OIDC_DISCOVERY_URL is set, DLQ_OIDC_CLIENT_SECRET is not"),
        ({"DLQ_OIDC_DISCOVERY_URL": "https://idp.example/.well-known/openid-configuration",
          "DLQ_OIDC_CLIENT_ID": "dlq", "DLQ_OIDC_CLIENT_SECRET": "s"},
         "DLQ_OIDC_ROLE_MAP is not"),
        ({"DLQ_OIDC_DISCOVERY_URL": "idp.example"}, "DLQ_OIDC_DISCOVERY_URL='idp.example'"),
        ({"DLQ_AUTH_PROXY_USER_HEADER": "X-User", "DLQ_AUTH_PROXY_GROUPS_HEADER": "X-Groups",
          "DLQ_AUTH_PROXY_ROLE_MAP": "ops=admin"}, "DLQ_AUTH_PROXY_NETS is not"),
        ({"DLQ_LOCAL_LOGIN": "false"}, "DLQ_LOCAL_LOGIN=false needs another way to sign in"),
    ],
)  # fmt: skip
def test_half_a_sign_in_configuration_stops_the_start_up(env, complaint):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DLQ_OIDC", "DLQ_AUTH"))}
    run = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True,
                         text=True, env={**environ, **env}, timeout=60)  # fmt: skip
    assert run.returncode != 0
    assert complaint in run.stderr
