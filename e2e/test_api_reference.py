"""The interactive API reference at /api/reference: Swagger UI served from the image
(no CDN), under the pages' Content-Security-Policy (the new_context fixture fails the
test on any violation), listing the public API's operations and not the ops
listener's paths."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import BrowserContext, expect

from e2e.harness import Onsale


def test_the_reference_renders_the_public_api(
        onsale: Onsale, new_context: Callable[[], BrowserContext]) -> None:
    page = new_context().new_page()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    response = page.goto("/api/reference")
    assert response is not None and response.status == 200
    expect(page.get_by_role("heading", name="onsale API")).to_be_visible()
    # an operation of each tier, by its operationId's summary line
    expect(page.get_by_text("/api/events/{event_id}/holds").first).to_be_visible()
    expect(page.get_by_text("/api/events/{event_id}/queue").first).to_be_visible()
    expect(page.get_by_text("/api/events/{event_id}/seatmap").first).to_be_visible()
    expect(page.get_by_text("/metrics")).to_have_count(0)
    assert all(url.startswith(onsale.base_url) for url in requested), requested  # no CDN
    with onsale.http() as c:
        doc = c.get("/api/reference/openapi.json").json()
    assert "/readyz" not in doc["paths"] and "/api/events/{event_id}/holds" in doc["paths"]
