"""Fixtures of the end-to-end suite (e2e/harness.py): ``onsale`` (one real
server for the session), ``browser`` (headless Debian Chromium), ``shopper``
(a new signed-in browser context per call) and ``shot`` (screenshots under
e2e/artifacts/, kept by CI)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from e2e.harness import ARTIFACTS, Onsale, require_chromium, start_onsale, stop_onsale


@pytest.fixture(scope="session")
def onsale() -> Iterator[Onsale]:
    server = start_onsale()
    try:
        yield server
    finally:
        stop_onsale(server)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = require_chromium()
    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=executable, headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield chromium
        finally:
            chromium.close()


def is_csp_violation(text: str) -> bool:
    return "Content Security Policy" in text or "Content-Security-Policy" in text


@pytest.fixture
def new_context(browser: Browser, onsale: Onsale) -> Iterator[Callable[[], BrowserContext]]:
    """Fresh browser contexts (separate cookies: separate shoppers), closed after the test.
    A page that breaks the pages' Content-Security-Policy fails the test."""
    made: list[BrowserContext] = []
    violations: list[str] = []

    def watch(page: Page) -> None:
        page.on("console", lambda m: violations.append(f"{page.url}: {m.text}")
                if is_csp_violation(m.text) else None)

    def make() -> BrowserContext:
        context = browser.new_context(base_url=onsale.base_url,
                                      viewport={"width": 1280, "height": 900})
        context.set_default_timeout(15_000)
        context.on("page", watch)
        made.append(context)
        return context

    yield make
    for context in made:
        context.close()
    assert not violations, "Content-Security-Policy violations:\n" + "\n".join(violations)


@pytest.fixture
def shopper(new_context: Callable[[], BrowserContext],
            onsale: Onsale) -> Callable[[], tuple[Page, str]]:
    """A page in a new context, signed in as a new account; returns (page, email)."""
    def make() -> tuple[Page, str]:
        context = new_context()
        email, _, cookie = onsale.new_account()
        context.add_cookies([{"name": "onsale_session", "value": cookie,
                              "url": onsale.base_url}])
        return context.new_page(), email
    return make


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Callable[[Page, str], Path]:
    """shot(page, "name") saves e2e/artifacts/<test>/<n>-name.png."""
    folder = ARTIFACTS / re.sub(r"[^\w.-]+", "_", request.node.name)
    count = [0]

    def take(page: Page, name: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        count[0] += 1
        path = folder / f"{count[0]:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path
    return take
