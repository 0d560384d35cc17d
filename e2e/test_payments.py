"""Paying on the checkout page with the payment simulator's test cards: an
approving card gives a captured order with tickets; a declined card is
explained and another card works; a 3-D Secure card goes through the
simulator's page and comes back to the order page. The browser tokenizes the
card at the simulator (POST /v1/payment_methods with the publishable key), and
only the PaymentMethod id goes to onsale."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, Request, expect

from e2e.harness import Onsale
from e2e.pages import Checkout, Order, alert
from e2e.pages_seats import MyOrders
from e2e.test_seat_map import hold_seat, open_map

Shopper = Callable[[], tuple[Page, str]]
Shot = Callable[[Page, str], Any]
APPROVE = "4242 4242 4242 4242"
DECLINE = "4000 0000 0000 0002"
THREE_DS = "4000 0027 6000 3184"


def checkout(page: Page, onsale: Onsale, seats: list[int]) -> Checkout:
    """A hold of ``seats`` made on the seat map; the page ends on checkout, its
    countdown running."""
    event_id = onsale.create_event(seats=300)
    open_map(page, event_id)
    for seat in seats[1:]:
        assert page.evaluate("id => window.onsaleSeatmap.select(id)", seat) is True
    pay = hold_seat(page, seats[0])
    pay.countdown.filter(has_text=re.compile(r"\d:\d\d")).wait_for()  # "… to pay: 9:59"
    return pay


def hold_id(page: Page) -> str:
    return page.url.rsplit("/", 1)[1]


def wait_captured(page: Page, seats: int) -> Order:
    page.wait_for_url("**/orders/*")
    order = Order(page)
    order.wait_until_paid(tickets=seats)
    return order


def test_an_approved_card_gives_a_captured_order_with_tickets(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    page, _ = shopper()
    pay = checkout(page, onsale, [11, 12])
    held = hold_id(page)
    assert pay.held.count() == 2
    expect(pay.total).to_have_accessible_name("Total 300.00 USD")
    shot(page, "checkout")
    sent: list[Request] = []

    def record(request: Request) -> None:
        sent.append(request)

    page.on("request", record)
    pay.use_test_card(APPROVE)  # the hint fills the card fields
    assert pay.card_number.input_value() == APPROVE
    assert (pay.expiry.input_value(), pay.cvc.input_value()) == ("12/34", "123")
    pay.press_pay()
    order = wait_captured(page, 2)
    # The card went to the simulator, never to onsale: core got the pm_… id only.
    digits = APPROVE.replace(" ", "")
    tokenized = [r for r in sent if r.url.endswith("/v1/payment_methods")
                 and r.method == "POST"]
    assert len(tokenized) == 1
    assert not tokenized[0].url.startswith(onsale.base_url)
    assert digits in (tokenized[0].post_data or "").replace("+", "").replace("%20", "")
    to_core = [r for r in sent if r.url.startswith(onsale.base_url)]
    assert any(r.url.endswith(f"/api/holds/{held}/checkout") for r in to_core)
    for request in to_core:
        carried = (request.url + (request.post_data or "")).replace(" ", "")
        assert digits not in carried and "4242" not in carried, request.url
    checkout_body = next(r for r in to_core if r.url.endswith("/checkout")).post_data_json
    assert checkout_body["payment_method"].startswith("pm_")
    assert "Paid" in order.status.inner_text()
    assert order.following.is_hidden()
    expect(order.amount).to_have_accessible_name("Amount 300.00 USD")
    tickets = order.tickets.all_inner_texts()
    assert all("row" in t and ":" in t for t in tickets), tickets
    made = page.request.get(f"/api/orders/{page.url.rsplit('/', 1)[1]}").json()
    assert made["hold_id"] == held and made["order_status"] == "CONFIRMED"
    assert sorted(t["code"] for t in made["tickets"]) == sorted(order.ticket_codes())
    shot(page, "order-captured")


def test_a_declined_card_is_explained_and_another_card_works(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    page, _ = shopper()
    pay = checkout(page, onsale, [21])
    pay.enter_card(DECLINE)
    pay.press_pay()
    flash = alert(page)
    flash.filter(has_text="declined").wait_for()
    assert flash.inner_text() == \
        "Your card was declined. You can try another card while your hold lasts."
    assert "/checkout/" in page.url and pay.pay_button.is_enabled()
    shot(page, "declined")
    pay.enter_card(APPROVE)
    pay.press_pay()
    wait_captured(page, 1)
    shot(page, "order-after-decline")


def test_a_3d_secure_card_goes_through_the_simulator_page_and_back(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    page, _ = shopper()
    pay = checkout(page, onsale, [31])
    pay.enter_card(THREE_DS)
    pay.press_pay()
    page.wait_for_url("**/3ds/*")
    shot(page, "3ds-page")
    page.get_by_role("button", name="Complete authentication").click()
    page.wait_for_url("**/orders/*")
    assert page.url.startswith(onsale.base_url + "/orders/")
    wait_captured(page, 1)
    shot(page, "order-after-3ds")


def test_my_orders_finds_an_order_again_after_its_tab_is_closed(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    page, _ = shopper()
    checkout(page, onsale, [21, 22]).pay(APPROVE)
    wait_captured(page, 2)
    order_url = page.url
    event_id = page.request.get(f"/api/orders/{order_url.rsplit('/', 1)[1]}").json()["event_id"]
    event_name = page.request.get(f"/api/events/{event_id}").json()["name"]
    page.goto("/")  # the order's tab is gone: the shopper starts from the events
    mine = MyOrders(page).open_from_menu()
    expect(mine.state(event_name)).to_have_text("Paid")
    expect(mine.order(event_name)).to_contain_text("300.00")
    expect(mine.order(event_name)).to_contain_text(re.compile(r"Section \S+, row \S+, seat"))
    shot(page, "my-orders")
    mine.open(event_name)
    page.wait_for_url(order_url)
    Order(page).wait_until_paid(tickets=2)


def test_my_orders_follows_an_order_until_it_is_paid(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    """An order waiting for 3-D Secure is shown as such, and the list changes by itself
    once the shopper completes it in another tab."""
    page, _ = shopper()
    pay = checkout(page, onsale, [35])
    pay.enter_card(THREE_DS)
    pay.press_pay()
    page.wait_for_url("**/3ds/*")
    other = page.context.new_page()
    other.goto("/")
    mine = MyOrders(other).open_from_menu()
    row = mine.table.get_by_role("row").nth(1)  # the newest: this one
    expect(row.get_by_role("status")).to_have_text("Your bank needs you to confirm")
    expect(other.get_by_text("Orders still being paid update here by themselves.")).to_be_visible()
    page.get_by_role("button", name="Complete authentication").click()
    page.wait_for_url("**/orders/*")
    expect(row.get_by_role("status")).to_have_text(re.compile("^Paid"), timeout=30_000)
    expect(row.get_by_role("status")).to_have_text("Paid", timeout=30_000)  # tickets too
    expect(other.get_by_text("Orders still being paid update here by themselves.")).to_be_hidden(
        timeout=30_000)
    shot(other, "my-orders-followed")


def test_the_order_page_of_another_account_is_not_found(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    page, _ = shopper()
    checkout(page, onsale, [41]).pay(APPROVE)
    stranger, _ = shopper()
    response = stranger.goto(page.url)
    assert response is not None and response.status == 404
    text = stranger.get_by_role("main").inner_text()
    assert "We could not find this order for your account." in text
    assert "{" not in text and "Traceback" not in text
    shot(stranger, "order-not-found")
