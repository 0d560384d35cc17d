"""General admission in a real browser against a real ``onsale dev``: a shopper picks a
quantity on the event page, holds places on the seat page, pays, and gets a ticket per
place, while a second browser watches "N left" change live on its own seat page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page

from e2e.harness import Onsale, fill_card, wait_for

Shopper = Callable[[], tuple[Page, str]]
Shot = Callable[[Page, str], Any]
APPROVE = "4242 4242 4242 4242"


def admit(page: Page, event_id: int) -> None:
    r = page.request.post(f"/api/events/{event_id}/queue")
    assert r.status == 200 and r.json().get("admission_token"), r.text()


def open_places(page: Page, event_id: int) -> None:
    admit(page, event_id)
    page.goto(f"/events/{event_id}/seats")
    page.wait_for_function("() => window.onsaleSeatmap && window.onsaleSeatmap.live === 'live'",
                           timeout=30_000)


def left_shown(page: Page, tier_id: int = 1) -> int:
    return int(page.inner_text(f"#ga-left-{tier_id}").replace(",", ""))


def test_places_bought_in_one_browser_count_down_in_another(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    event_id = onsale.create_event(seats=0, ga_tiers=[
        {"name": "Floor", "price_minor": 4000, "capacity": 50, "stripes": 4,
         "max_per_hold": 6}])
    buyer, _ = shopper()
    watcher, _ = shopper()
    # The event page: the tier with what is left, and a quantity to carry on.
    buyer.goto(f"/events/{event_id}")
    assert buyer.inner_text("[data-ga-left='1']") == "50"
    buyer.select_option("#ga-pick-1", "3")
    open_places(buyer, event_id)
    open_places(watcher, event_id)
    assert left_shown(watcher) == 50
    assert buyer.input_value("#ga-quantity-1") == "3"  # remembered from the event page
    with buyer.expect_response(lambda r: r.url.endswith("/holds")
                               and r.request.method == "POST") as held:
        buyer.click("#ga-hold-1")
    assert held.value.status == 201, held.value.text()
    # The other browser's "N left" follows from the live feed, without a reload.
    watcher.evaluate("() => { window.notReloaded = true; }")
    watcher.wait_for_function("() => document.getElementById('ga-left-1').textContent === '47'",
                              timeout=10_000)
    assert watcher.evaluate("window.onsaleSeatmap.placesLeft(1)") == 47
    buyer.wait_for_url("**/checkout/*")
    assert "3 × general admission" in buyer.inner_text("#hold-ga")
    fill_card(buyer, APPROVE)
    buyer.click("#pay-button")
    buyer.wait_for_url("**/orders/*")
    buyer.wait_for_selector("#order-status[data-status='CAPTURED']", timeout=30_000)
    # One ticket per place, once the ticket consumer has issued them.
    assert wait_for(lambda: buyer.locator("#tickets li[data-place]").count() == 3, within=30)
    places = buyer.eval_on_selector_all("#tickets li[data-place]",
                                        "els => els.map(e => e.dataset.place)")
    assert sorted(places) == ["1", "2", "3"]
    assert left_shown(watcher) == 47 and watcher.evaluate("window.notReloaded") is True
    shot(watcher, "ga-left")


def test_a_sold_out_tier_says_so(shopper: Shopper, onsale: Onsale) -> None:
    event_id = onsale.create_event(seats=10, ga_tiers=[
        {"name": "Pit", "price_minor": 2500, "capacity": 2, "stripes": 1, "max_per_hold": 4}])
    first, _ = shopper()
    second, _ = shopper()
    open_places(first, event_id)
    open_places(second, event_id)
    first.select_option("#ga-quantity-1", "2")
    first.click("#ga-hold-1")
    first.wait_for_url("**/checkout/*")
    second.wait_for_function("() => document.getElementById('ga-left-1').textContent === '0'",
                             timeout=10_000)
    assert second.is_disabled("#ga-hold-1")  # nothing left to hold
