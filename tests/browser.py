"""Playwright for Python driving Debian's Chromium (never a browser download).

`browser` is one headless Chromium per test; `page` is a fresh context (cookies,
storage) per test. Screenshots go to tests/artifacts/ (git-ignored, kept by CI).
"""

import os
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connections

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).parent / "artifacts"


@contextmanager
def _orm_beside_playwright():
    """Playwright's sync API runs an asyncio loop on the test's thread while it is open,
    and Django refuses ORM calls beside a running loop (SynchronousOnlyOperation), though
    the test code is synchronous; allow them, only for that long."""
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield
    finally:
        if before is None:
            del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture
def browser():
    """Per test, not per session: the loop must be gone before the database is flushed
    and before the next test that is not a browser test runs (starting takes ~1 s)."""
    from playwright.sync_api import sync_playwright

    with _orm_beside_playwright(), sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()
        # With a loop running, Django keeps the test's connections apart from the thread's
        # (a context-local store); close them while they are still reachable, or they
        # stay open and block dropping the test database.
        connections.close_all()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def log_in(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def forged_post(page, url: str) -> int:
    """The status of a POST the page did not offer, made from it with its own CSRF token."""
    return page.evaluate(
        """async (url) => {
            const token = JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"];
            const response = await fetch(url, {method: "POST", headers: {"X-CSRFToken": token}});
            return response.status;
        }""",
        url,
    )
