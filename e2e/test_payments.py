"""Paying on the checkout page with the payment simulator's test cards: an
approving card gives a captured order with tickets; a declined card is
explained and another card works; a 3-D Secure card goes through the
simulator's page and comes back to the order page. The browser tokenizes the
card at the simulator (POST /v1/payment_methods with the publishable key), and
only the PaymentMethod id goes to onsale."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, Request

from e2e.harness import Onsale, fill_card
from e2e.test_seat_map import hold_seat, open_map

Shopper = Callable[[], tuple[Page, str]]
Shot = Callable[[Page, str], Any]
APPROVE = "4242 4242 4242 4242"
DECLINE = "4000 0000 0000 0002"
THREE_DS = "4000 0027 6000 3184"


def checkout(page: Page, onsale: Onsale, seats: list[int]) -> str:
    """A hold of ``seats`` made on the seat map; the page ends on checkout."""
    event_id = onsale.create_event(seats=300)
    open_map(page, event_id)
    for seat in seats[1:]:
        assert page.evaluate("id => window.onsaleSeatmap.select(id)", seat) is True
    hold_seat(page, seats[0])
    page.locator("#countdown-value").filter(has_text=":").wait_for()
    return page.url.rsplit("/", 1)[1]


def wait_captured(page: Page, seats: int) -> None:
    page.wait_for_url("**/orders/*")
    page.wait_for_selector("#order-status[data-status='CAPTURED']", timeout=30_000)
    page.wait_for_function("n => document.querySelectorAll('#tickets li').length === n",
                           arg=seats, timeout=30_000)


def test_an_approved_card_gives_a_captured_order_with_tickets(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    page, _ = shopper()
    hold_id = checkout(page, onsale, [11, 12])
    assert page.locator("#hold-seats tr").count() == 2
    assert page.locator("#hold-total").inner_text() == "300.00 USD"
    shot(page, "checkout")
    sent: list[Request] = []

    def record(request: Request) -> None:
        sent.append(request)

    page.on("request", record)
    page.click(f".card-hint[data-card='{APPROVE}']")  # the hint fills the card fields
    assert page.input_value("#card") == APPROVE
    assert (page.input_value("#card-exp"), page.input_value("#card-cvc")) == ("12/34", "123")
    page.click("#pay-button")
    wait_captured(page, 2)
    # The card went to the simulator, never to onsale: core got the pm_… id only.
    digits = APPROVE.replace(" ", "")
    tokenized = [r for r in sent if r.url.endswith("/v1/payment_methods")
                 and r.method == "POST"]
    assert len(tokenized) == 1
    assert not tokenized[0].url.startswith(onsale.base_url)
    assert digits in (tokenized[0].post_data or "").replace("+", "").replace("%20", "")
    to_core = [r for r in sent if r.url.startswith(onsale.base_url)]
    assert any(r.url.endswith(f"/api/holds/{hold_id}/checkout") for r in to_core)
    for request in to_core:
        carried = (request.url + (request.post_data or "")).replace(" ", "")
        assert digits not in carried and "4242" not in carried, request.url
    checkout_body = next(r for r in to_core if r.url.endswith("/checkout")).post_data_json
    assert checkout_body["payment_method"].startswith("pm_")
    words = page.locator("#order-words").inner_text()
    assert "Paid" in words
    assert page.locator("#order-following").is_hidden()
    assert page.locator("#order-amount").inner_text() == "300.00 USD"
    tickets = page.locator("#tickets li").all_inner_texts()
    assert all("row" in t and ":" in t for t in tickets), tickets
    order = page.request.get(f"/api/orders/{page.url.rsplit('/', 1)[1]}").json()
    assert order["hold_id"] == hold_id and order["order_status"] == "CONFIRMED"
    assert sorted(t["code"] for t in order["tickets"]) == \
        sorted(page.locator("#tickets code").all_inner_texts())
    shot(page, "order-captured")


def test_a_declined_card_is_explained_and_another_card_works(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    page, _ = shopper()
    checkout(page, onsale, [21])
    fill_card(page, DECLINE)
    page.click("#pay-button")
    flash = page.locator("#flash")
    flash.wait_for(state="visible")
    page.wait_for_function(
        "() => document.getElementById('flash').textContent.includes('declined')")
    assert flash.inner_text() == \
        "Your card was declined. You can try another card while your hold lasts."
    assert "/checkout/" in page.url and page.is_enabled("#pay-button")
    shot(page, "declined")
    fill_card(page, APPROVE)
    page.click("#pay-button")
    wait_captured(page, 1)
    shot(page, "order-after-decline")


def test_a_3d_secure_card_goes_through_the_simulator_page_and_back(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    page, _ = shopper()
    checkout(page, onsale, [31])
    fill_card(page, THREE_DS)
    page.click("#pay-button")
    page.wait_for_url("**/3ds/*")
    shot(page, "3ds-page")
    page.get_by_role("button", name="Complete authentication").click()
    page.wait_for_url("**/orders/*")
    assert page.url.startswith(onsale.base_url + "/orders/")
    wait_captured(page, 1)
    shot(page, "order-after-3ds")


def test_the_order_page_of_another_account_is_not_found(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    page, _ = shopper()
    checkout(page, onsale, [41])
    fill_card(page, APPROVE)
    page.click("#pay-button")
    page.wait_for_url("**/orders/*")
    stranger, _ = shopper()
    response = stranger.goto(page.url)
    assert response is not None and response.status == 404
    text = stranger.locator("main").inner_text()
    assert "We could not find this order for your account." in text
    assert "{" not in text and "Traceback" not in text
    shot(stranger, "order-not-found")
