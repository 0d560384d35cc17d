"""Accounts in a real browser: sign up, sign out, sign in, and the sentences
a shopper sees for bad input (web/templates/shop/signin.html, signup.html)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from e2e.harness import Onsale
from e2e.pages import EventPage, Queue, SignIn, SignUp, alert, page_text

Shot = Callable[[Page, str], Path]


def signed_in(context: BrowserContext) -> bool:
    return any(c["name"].removeprefix("__Host-") == "onsale_session" for c in context.cookies())


def test_sign_up_sign_out_and_sign_in_again(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shot: Shot) -> None:
    context = new_context()
    page = context.new_page()
    email = f"e2e-{uuid.uuid4().hex[:10]}@example.com"

    signup = SignUp(page).open()
    signup.email.fill(email)
    signup.password.fill("correct horse battery")
    shot(page, "signup")
    signup.password.press("Enter")  # the keyboard submits the form
    page.wait_for_url(onsale.base_url + "/")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    assert signed_in(context)
    shot(page, "events-signed-in")

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(onsale.base_url + "/")
    expect(page.get_by_role("link", name="Sign in")).to_be_visible()
    assert not signed_in(context)

    signin = SignIn(page).open()
    signin.email.fill(email.upper())  # emails match case-insensitively
    signin.password.fill("correct horse battery")
    shot(page, "signin")
    signin.submit()
    page.wait_for_url(onsale.base_url + "/")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    assert signed_in(context)


def test_bad_input_is_explained_in_sentences(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shot: Shot) -> None:
    email, _, _ = onsale.new_account()
    page = new_context().new_page()
    flash = alert(page)

    signin = SignIn(page).open()
    signin.sign_in(email, "not my password")
    expect(flash).to_have_text("That email and password do not match an account.")
    expect(signin.password).to_be_focused()
    assert page.url.endswith("/signin")
    shot(page, "signin-wrong-password")

    signup = SignUp(page).open()
    signup.submit()
    expect(flash).to_have_text("Please enter your email address.")
    signup.email.fill("not-an-email")
    signup.password.fill("long enough password")
    signup.submit()
    expect(flash).to_have_text("Please enter a valid email address.")
    signup.email.fill(email)
    signup.submit()
    expect(flash).to_contain_text("An account with this email already exists.")
    signup.email.fill(f"new-{email}")
    signup.password.fill("short")
    signup.submit()
    expect(flash).to_have_text("Your password must be between 8 and 256 characters.")
    shot(page, "signup-short-password")
    body = page_text(page)
    assert "{" not in body and "problem" not in body.lower()


def test_sign_in_returns_to_the_page_that_asked(
        onsale: Onsale, new_context: Callable[[], BrowserContext]) -> None:
    event_id = onsale.create_event(queue_policy="fifo", onsale_at="2099-01-01T10:00:00Z")
    email, password, _ = onsale.new_account()
    page = new_context().new_page()
    signin = EventPage(page, event_id).open().sign_in_to_join()
    page.wait_for_url(f"**/signin?next=/events/{event_id}/queue")
    signin.sign_in(email, password)
    page.wait_for_url(f"**/events/{event_id}/queue")
    expect(Queue(page, event_id).room).to_have_attribute("data-state", "prequeue")
