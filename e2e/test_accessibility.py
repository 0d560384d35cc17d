"""Every shopper and console page checked by axe-core in a real browser (issue 28,
"pages everyone can use"): no violation of serious or critical impact. Each page is
its own test, reached as a shopper or an operator reaches it. docs/web.md#accessibility.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import BrowserContext, Page, expect

from e2e.harness import Onsale
from e2e.test_console import sign_in
from e2e.test_payments import APPROVE, checkout, wait_captured
from e2e.test_seat_map import open_map

Shopper = Callable[[], tuple[Page, str]]
Contexts = Callable[[], BrowserContext]
SERIOUS = ("serious", "critical")
AXE = Axe()


def violations(page: Page) -> list[dict[str, Any]]:
    """What axe finds on the page as it is now, serious or critical only."""
    page.wait_for_load_state("networkidle")
    found = AXE.run(page).response["violations"]
    return [v for v in found if v.get("impact") in SERIOUS]


def described(found: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']}\n  " +
        "\n  ".join(str(n.get("target")) + " " + n.get("failureSummary", "").replace("\n", " ")
                    for n in v["nodes"][:5]) for v in found)


def visitor(new_context: Contexts) -> Page:
    return new_context().new_page()


# Each page: how a shopper or an operator gets there. Add a page here.
Reach = Callable[[Onsale, Shopper, Contexts], Page]


def anonymous(path: str) -> Reach:
    """A page a visitor opens without signing in."""
    def reach(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
        page = visitor(new_context)
        page.goto(path)
        return page
    reach.__name__ = path.strip("/").replace("/", "_") or "root"
    return reach


def paid(onsale: Onsale, shopper: Shopper, seat: int) -> Page:
    """A new shopper's page on the order of one seat it has just paid for."""
    page, _ = shopper()
    checkout(page, onsale, [seat]).pay(APPROVE)
    wait_captured(page, 1)
    return page


def events_list(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    onsale.create_event()
    page = visitor(new_context)
    page.goto("/")
    return page


def event_page(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    page, _ = shopper()
    event_id = onsale.create_event(queue_policy="random", onsale_at="2030-01-01T19:30:00Z",
                                   time_zone="Europe/Berlin")
    page.goto(f"/events/{event_id}")
    return page


def ga_event_page(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    page, _ = shopper()
    event_id = onsale.create_event(seats=0, ga_tiers=[
        {"name": "Floor", "price_minor": 4000, "capacity": 50}])
    page.goto(f"/events/{event_id}")
    return page


def waiting_room(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    page, _ = shopper()
    event_id = onsale.create_event(queue_policy="fifo", onsale_at="2030-01-01T19:30:00Z")
    page.goto(f"/events/{event_id}/queue")
    expect(page.get_by_role("region", name="Waiting room")).to_be_visible()
    return page


def seat_map(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    page, _ = shopper()
    open_map(page, onsale.create_event(seats=300))
    return page


def checkout_page(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    page, _ = shopper()
    checkout(page, onsale, [11, 12])
    return page


def order_page(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    return paid(onsale, shopper, 21)


def my_orders(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    page = paid(onsale, shopper, 31)
    page.goto("/orders")
    return page


def console_events(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    onsale.create_event()
    page = visitor(new_context)
    sign_in(page, onsale.admin_token)
    return page


def console_event(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    event_id = onsale.create_event(queue_policy="fifo")
    page = visitor(new_context)
    sign_in(page, onsale.admin_token, f"/ops/events/{event_id}")
    expect(page.get_by_role("article")).to_have_attribute("data-loaded", "1")
    return page


def console_fairness(onsale: Onsale, shopper: Shopper, new_context: Contexts) -> Page:
    page = visitor(new_context)
    sign_in(page, onsale.admin_token, "/ops/fairness")
    return page


PAGES = [events_list, event_page, ga_event_page, anonymous("/signin"), anonymous("/signup"),
         waiting_room, seat_map, checkout_page, order_page, my_orders,
         anonymous("/events/424242424"), anonymous("/ops/signin"), console_events,
         console_event, console_fairness]


@pytest.mark.parametrize("reach", PAGES, ids=[p.__name__ for p in PAGES])
def test_no_serious_accessibility_violation(
        reach: Reach, onsale: Onsale,
        shopper: Shopper, new_context: Contexts) -> None:
    page = reach(onsale, shopper, new_context)
    found = violations(page)
    assert not found, f"{page.url}:\n{described(found)}"


def test_the_skip_link_is_the_first_stop_and_leads_to_the_content(
        new_context: Contexts) -> None:
    page = visitor(new_context)
    page.goto("/")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    expect(skip).to_be_visible()  # shown once focused
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"#main$"))


def test_the_check_finds_what_it_looks_for(new_context: Contexts) -> None:
    """On one of our pages with an image and a field stripped of their names, axe
    reports both: an empty result above is a real pass, not a check that never ran."""
    page = visitor(new_context)
    page.goto("/signin")
    page.evaluate("""() => {
        const main = document.querySelector('main');
        const img = document.createElement('img');
        img.src = '/static/favicon.svg';
        const input = document.createElement('input');
        input.type = 'text';
        main.append(img, input);
    }""")
    ids = {v["id"] for v in violations(page)}
    assert {"image-alt", "label"} <= ids, ids


def tab_to(page: Page, target: Any, most: int = 60) -> None:
    """Press Tab (only the keyboard) until ``target`` has the focus."""
    for _ in range(most):
        if target.evaluate("e => e === document.activeElement"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {target}")


def test_a_purchase_with_the_keyboard_alone(onsale: Onsale, shopper: Shopper) -> None:
    """From the event page to a paid order without a mouse: the queue's link, the seat
    picker (section, row, seat: each seat named with its tier, price and state), hold,
    the card, pay."""
    page, _ = shopper()
    event_id = onsale.create_event(seats=300, name="Keyboard night")
    page.goto(f"/events/{event_id}")
    tab_to(page, page.get_by_role("link", name="Enter the sale"))
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/events/{event_id}/seats", timeout=30_000)
    picker = page.get_by_role("form", name="Pick a seat")
    seat = picker.get_by_label("Seat", exact=True)
    expect(seat).to_be_enabled(timeout=30_000)
    tab_to(page, picker.get_by_label("Section"))
    page.keyboard.press("ArrowDown")           # the second section
    tab_to(page, picker.get_by_label("Row"))
    page.keyboard.press("ArrowDown")           # its second row
    tab_to(page, seat)
    page.keyboard.press("ArrowDown")
    chosen = seat.evaluate("e => e.selectedOptions[0].textContent")
    assert re.fullmatch(r"Seat \d+ · .+ · [\d,.]+ USD", chosen), chosen  # named and priced
    tab_to(page, picker.get_by_role("button", name="Add seat"))
    page.keyboard.press("Enter")
    expect(page.get_by_role("list", name="Your seats").get_by_role("listitem")).to_have_count(1)
    tab_to(page, page.get_by_role("button", name="Hold these seats"))
    page.keyboard.press("Enter")
    page.wait_for_url("**/checkout/*", timeout=30_000)
    for label, text in (("Card number", APPROVE), ("Expiry (MM/YY)", "12/34"), ("CVC", "123")):
        tab_to(page, page.get_by_label(label))
        page.keyboard.type(text)
    tab_to(page, page.get_by_role("button", name=re.compile("^Pay")))
    page.keyboard.press("Enter")
    wait_captured(page, 1)
