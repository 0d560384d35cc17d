"""Fixtures of the end-to-end suite (docs/qa.md), on pytest-playwright: ``onsale`` (the
onsale under test: one ``onsale dev`` started for the session, or the deployment that
``--base-url`` names), the plugin's ``browser`` launched as headless Debian Chromium,
``new_context`` (the plugin's, with the pages' Content-Security-Policy watched),
``shopper`` (a new signed-in browser context per call) and ``shot`` (screenshots under
e2e/artifacts/). On a failure the plugin keeps the test's trace, screenshot and video
under e2e/artifacts/ too (the options in pyproject.toml)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page

from e2e.harness import (
    ARTIFACTS,
    Onsale,
    remote_onsale,
    require_chromium,
    start_onsale,
    stop_onsale,
    use_debian_ffmpeg,
)


def pytest_configure(config: pytest.Config) -> None:
    use_debian_ffmpeg()  # before the plugin starts Playwright's driver
    config.addinivalue_line(
        "markers", "local_stack(reason): needs the onsale dev this suite starts (it reads "
        "or stops what only a local stack has); skipped, with the reason, against "
        "--base-url")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not (config.getoption("--base-url", None) or config.getini("base_url")):
        return
    for item in items:
        marker = item.get_closest_marker("local_stack")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.skip(
                reason=f"needs the local stack, not --base-url: {reason}"))


@pytest.fixture(scope="session")
def onsale(base_url: str | None) -> Iterator[Onsale]:
    if base_url:  # a deployment: docs/qa.md#against-staging
        yield remote_onsale(base_url)
        return
    server = start_onsale()
    try:
        yield server
    finally:
        stop_onsale(server)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Debian's Chromium (playwright install cannot download here), headless."""
    return {**browser_type_launch_args, "executable_path": require_chromium(),
            "args": ["--no-sandbox", "--disable-dev-shm-usage"]}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any],
                         onsale: Onsale) -> dict[str, Any]:
    return {**browser_context_args, "base_url": onsale.base_url,
            "viewport": {"width": 1280, "height": 900}}


def is_csp_violation(text: str) -> bool:
    return "Content Security Policy" in text or "Content-Security-Policy" in text


@pytest.fixture
def new_context(new_context: Callable[..., BrowserContext]
                ) -> Iterator[Callable[[], BrowserContext]]:
    """Fresh browser contexts (separate cookies: separate shoppers), closed after the test
    by the plugin, which keeps their traces and videos when the test fails. A page that
    breaks the pages' Content-Security-Policy fails the test."""
    violations: list[str] = []

    def watch(page: Page) -> None:
        page.on("console", lambda m: violations.append(f"{page.url}: {m.text}")
                if is_csp_violation(m.text) else None)

    def make() -> BrowserContext:
        context = new_context()
        context.set_default_timeout(15_000)
        context.on("page", watch)
        return context

    yield make
    assert not violations, "Content-Security-Policy violations:\n" + "\n".join(violations)


@pytest.fixture
def shopper(new_context: Callable[[], BrowserContext],
            onsale: Onsale) -> Callable[[], tuple[Page, str]]:
    """A page in a new context, signed in as a new account; returns (page, email)."""
    def make() -> tuple[Page, str]:
        context = new_context()
        email, _, cookie = onsale.new_account()
        context.add_cookies([{"name": onsale.cookie_name, "value": cookie,
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
