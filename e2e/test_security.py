"""The pages' security headers in a real browser: every page loads with its
Content-Security-Policy and without a console error (no inline script
refused, no missing favicon), and a foreign site's form is refused."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import BrowserContext, Page, Route, expect

from e2e.harness import Onsale
from e2e.pages import SeatMap

Shopper = Callable[[], tuple[Page, str]]


def console_errors(page: Page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    return errors


def test_pages_load_under_their_policy_without_console_errors(
        onsale: Onsale, shopper: Shopper, new_context: Callable[[], BrowserContext]) -> None:
    event_id = onsale.demo_event_id
    anonymous = new_context().new_page()
    errors = console_errors(anonymous)
    for path in ("/", f"/events/{event_id}", "/signin", "/signup", "/ops/signin"):
        response = anonymous.goto(path)
        assert response is not None and response.status == 200, path
        headers = response.headers
        assert "script-src 'self'" in headers["content-security-policy"], path
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"
        anonymous.wait_for_load_state("networkidle")
    favicon = anonymous.request.get("/favicon.ico")
    assert favicon.status == 200 and favicon.headers["content-type"] == "image/svg+xml"
    assert errors == []

    page, _ = shopper()
    errors = console_errors(page)
    page.goto(f"/events/{event_id}/queue")
    expect(page).to_have_url(f"{onsale.base_url}/events/{event_id}/seats", timeout=30_000)
    expect(SeatMap(page).live_status).not_to_have_text("Loading the seat map…")
    page.wait_for_load_state("networkidle")
    assert [e for e in errors if "Failed to load resource" not in e] == []


def test_a_foreign_sites_form_is_refused(onsale: Onsale, shopper: Shopper) -> None:
    page, email = shopper()
    evil = "http://evil.test"

    def serve_evil(route: Route) -> None:
        route.fulfill(content_type="text/html", body=(
            f'<form aria-label="Sign out" method="post" action="{onsale.base_url}/signout">'
            "</form>"
            f'<form aria-label="Sign up" method="post" enctype="text/plain" '
            f'action="{onsale.base_url}/api/accounts">'
            '<input name=\'{"email":"x@evil.test","password":"12345678","x":"\' value=\'"}\'>'
            "</form>"))

    page.route(f"{evil}/**", serve_evil)
    page.goto(f"{evil}/")
    with page.expect_navigation() as signout:
        page.get_by_role("form", name="Sign out").evaluate("form => form.submit()")
    response = signout.value
    assert response is not None and response.status == 403
    assert response.json()["code"] == "cross_site_request"

    page.goto(f"{evil}/")
    with page.expect_navigation() as signup:
        page.get_by_role("form", name="Sign up").evaluate("form => form.submit()")
    response = signup.value
    assert response is not None and response.status == 403

    page.unroute(f"{evil}/**")
    page.goto("/")
    assert page.request.get("/api/me").json()["email"] == email  # still signed in
    with onsale.http() as c:  # and the forged sign-up made no account
        r = c.post("/api/session", json={"email": "x@evil.test", "password": "12345678"})
        assert r.status_code == 401
