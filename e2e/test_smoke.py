"""The harness itself: onsale dev is up with its demo event, and Chromium loads a page."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import BrowserContext

from e2e.harness import Onsale


def test_the_demo_server_answers_and_chromium_renders_a_page(
        onsale: Onsale, new_context: Callable[[], BrowserContext]) -> None:
    with onsale.http() as c:
        event = c.get(f"/api/events/{onsale.demo_event_id}").json()
    assert event["seat_count"] == 50_000
    page = new_context().new_page()
    response = page.goto("/static/onsale.css")
    assert response is not None and response.status == 200
