"""Accounts in a real browser: sign up, sign out, sign in, and the sentences
a shopper sees for bad input (web/templates/shop/signin.html, signup.html)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from e2e.harness import Onsale

Shot = Callable[[Page, str], Path]


def signed_in(context: BrowserContext) -> bool:
    return any(c["name"].removeprefix("__Host-") == "onsale_session" for c in context.cookies())


def test_sign_up_sign_out_and_sign_in_again(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shot: Shot) -> None:
    context = new_context()
    page = context.new_page()
    email = f"e2e-{uuid.uuid4().hex[:10]}@example.com"

    page.goto("/signup")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill("correct horse battery")
    shot(page, "signup")
    page.get_by_label("Password").press("Enter")  # the keyboard submits the form
    page.wait_for_url(onsale.base_url + "/")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    assert signed_in(context)
    shot(page, "events-signed-in")

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(onsale.base_url + "/")
    expect(page.get_by_role("link", name="Sign in")).to_be_visible()
    assert not signed_in(context)

    page.goto("/signin")
    page.fill("input[name=email]", email.upper())  # emails match case-insensitively
    page.fill("input[name=password]", "correct horse battery")
    shot(page, "signin")
    page.click("#signin-submit")
    page.wait_for_url(onsale.base_url + "/")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    assert signed_in(context)


def test_bad_input_is_explained_in_sentences(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shot: Shot) -> None:
    email, _, _ = onsale.new_account()
    page = new_context().new_page()
    flash = page.locator("#flash")

    page.goto("/signin")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", "not my password")
    page.click("#signin-submit")
    expect(flash).to_have_text("That email and password do not match an account.")
    expect(page.locator("input[name=password]")).to_be_focused()
    assert page.url.endswith("/signin")
    shot(page, "signin-wrong-password")

    page.goto("/signup")
    page.click("#signup-submit")
    expect(flash).to_have_text("Please enter your email address.")
    page.fill("input[name=email]", "not-an-email")
    page.fill("input[name=password]", "long enough password")
    page.click("#signup-submit")
    expect(flash).to_have_text("Please enter a valid email address.")
    page.fill("input[name=email]", email)
    page.click("#signup-submit")
    expect(flash).to_contain_text("An account with this email already exists.")
    page.fill("input[name=email]", f"new-{email}")
    page.fill("input[name=password]", "short")
    page.click("#signup-submit")
    expect(flash).to_have_text("Your password must be between 8 and 256 characters.")
    shot(page, "signup-short-password")
    body = page.locator("body").inner_text()
    assert "{" not in body and "problem" not in body.lower()


def test_sign_in_returns_to_the_page_that_asked(
        onsale: Onsale, new_context: Callable[[], BrowserContext]) -> None:
    event_id = onsale.create_event(queue_policy="fifo", onsale_at="2099-01-01T10:00:00Z")
    email, password, _ = onsale.new_account()
    page = new_context().new_page()
    page.goto(f"/events/{event_id}")
    page.click("#join-queue")
    page.wait_for_url(f"**/signin?next=/events/{event_id}/queue")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("#signin-submit")
    page.wait_for_url(f"**/events/{event_id}/queue")
    expect(page.locator("#waiting-room")).to_have_attribute("data-state", "prequeue")
