"""DLQ_TRACE_URL: an http(s) URL with {trace_id}, checked at start-up; the id goes in quoted."""

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from console.env import env_link_template
from dlq.messages import traces
from tests import ROOT


def read(monkeypatch, value: str) -> str:
    monkeypatch.setenv("DLQ_TRACE_URL", value)
    return env_link_template("DLQ_TRACE_URL", "", "{trace_id}")


@pytest.mark.parametrize(
    "value",
    [
        "https://tempo.example/explore?traceId={trace_id}",
        "http://jaeger:16686/trace/{trace_id}",
        "HTTPS://grafana.example/d/x?var-trace={trace_id}&orgId=1",
    ],
)
def test_an_http_url_with_the_placeholder_is_taken_as_given(monkeypatch, value):
    assert read(monkeypatch, value) == value


def test_unset_or_empty_is_no_link(monkeypatch):
    assert read(monkeypatch, "") == ""
    monkeypatch.delenv("DLQ_TRACE_URL")
    assert env_link_template("DLQ_TRACE_URL", "", "{trace_id}") == ""


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("https://tempo.example/explore", "does not contain {trace_id}"),
        ("https://tempo.example/explore?traceId={traceid}", "does not contain {trace_id}"),
        ("javascript:alert(1)//{trace_id}", "scheme http or https"),
        ("ftp://tempo.example/{trace_id}", "scheme http or https"),
        ("tempo.example/{trace_id}", "scheme http or https"),
        ("https:///{trace_id}", "scheme http or https"),
        ("https://", "scheme http or https"),
    ],
)
def test_junk_is_a_start_up_error_naming_the_variable(monkeypatch, value, complaint):
    with pytest.raises(ImproperlyConfigured, match=complaint) as raised:
        read(monkeypatch, value)
    assert str(raised.value).startswith("DLQ_TRACE_URL=")


def test_the_console_does_not_start_with_a_bad_one():
    env = {**os.environ, "DLQ_TRACE_URL": "ftp://tempo.example/{trace_id}"}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "DLQ_TRACE_URL='ftp://tempo.example/{trace_id}' is not a URL" in done.stderr


def test_the_trace_id_is_url_quoted_into_the_link(settings):
    settings.DLQ_TRACE_URL = "https://x.example/t/{trace_id}?again={trace_id}"
    assert traces.link("abc") == "https://x.example/t/abc?again=abc"
    # Only hex is ever stored; anything else that got there goes in quoted, never as syntax.
    assert traces.link("a/b?c=d&e#f") == (
        "https://x.example/t/a%2Fb%3Fc%3Dd%26e%23f?again=a%2Fb%3Fc%3Dd%26e%23f"
    )
    assert traces.link("") == ""
    settings.DLQ_TRACE_URL = ""
    assert traces.link("abc") == ""
