"""General admission in a real browser against a real ``onsale dev``: a shopper picks a
quantity on the event page, holds places on the seat page, pays, and gets a ticket per
place, while a second browser watches "N left" change live on its own seat page."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, expect

from e2e.harness import Onsale
from e2e.pages import Checkout, EventPage, SeatMap

Shopper = Callable[[], tuple[Page, str]]
Shot = Callable[[Page, str], Any]
APPROVE = "4242 4242 4242 4242"


def admit(page: Page, event_id: int) -> None:
    r = page.request.post(f"/api/events/{event_id}/queue")
    assert r.status == 200 and r.json().get("admission_token"), r.text()


def open_places(page: Page, event_id: int) -> SeatMap:
    admit(page, event_id)
    return SeatMap(page).open(event_id).wait_until_live(seats=False)


def left(n: int) -> re.Pattern[str]:
    """A tier's "… · N left", exactly N."""
    return re.compile(rf"(^|\s){n:,} left$")


def test_places_bought_in_one_browser_count_down_in_another(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    event_id = onsale.create_event(seats=0, ga_tiers=[
        {"name": "Floor", "price_minor": 4000, "capacity": 50, "stripes": 4,
         "max_per_hold": 6}])
    buyer, _ = shopper()
    watcher, _ = shopper()
    # The event page: the tier with what is left, and a quantity to carry on.
    event = EventPage(buyer, event_id).open()
    assert event.places_left("Floor").inner_text() == "50 left"
    event.how_many("Floor").select_option("3")
    places = open_places(buyer, event_id)
    watching = open_places(watcher, event_id)
    assert watching.places_left_now("Floor") == 50
    assert places.how_many("Floor").input_value() == "3"  # remembered from the event page
    with buyer.expect_response(lambda r: r.url.endswith("/holds")
                               and r.request.method == "POST") as held:
        places.hold_places_button("Floor").click()
    assert held.value.status == 201, held.value.text()
    # The other browser's "N left" follows from the live feed, without a reload.
    watcher.evaluate("() => { window.notReloaded = true; }")
    expect(watching.places_left("Floor")).to_have_text(left(47), timeout=10_000)
    assert watcher.evaluate("window.onsaleSeatmap.placesLeft(1)") == 47
    buyer.wait_for_url("**/checkout/*")
    checkout = Checkout(buyer)
    expect(checkout.held.filter(has_text="3 × general admission")).to_have_count(1)
    order = checkout.pay(APPROVE)
    # One ticket per place, once the ticket consumer has issued them.
    order.wait_until_paid(tickets=3)
    tickets = order.tickets.all_inner_texts()
    assert all(t.startswith("Floor, place ") for t in tickets), tickets
    numbers = [re.search(r"place (\d+):", t) for t in tickets]
    assert sorted(n.group(1) for n in numbers if n) == ["1", "2", "3"], tickets
    assert watching.places_left_now("Floor") == 47
    assert watcher.evaluate("window.notReloaded") is True
    shot(watcher, "ga-left")


def test_a_sold_out_tier_says_so(shopper: Shopper, onsale: Onsale) -> None:
    event_id = onsale.create_event(seats=10, ga_tiers=[
        {"name": "Pit", "price_minor": 2500, "capacity": 2, "stripes": 1, "max_per_hold": 4}])
    first, _ = shopper()
    second, _ = shopper()
    buying = open_places(first, event_id)
    watching = open_places(second, event_id)
    buying.how_many("Pit").select_option("2")
    buying.hold_places_button("Pit").click()
    first.wait_for_url("**/checkout/*")
    expect(watching.places_left("Pit")).to_have_text(left(0), timeout=10_000)
    assert watching.hold_places_button("Pit").is_disabled()  # nothing left to hold
