"""The whole journey in one browser: sign up → join the queue → admitted → seat
map → two seats → hold → pay with the approving test card → order confirmed
with its tickets."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from e2e.harness import Onsale, fill_card


def test_sign_up_queue_seats_hold_pay_and_get_tickets(
        onsale: Onsale, new_context: Callable[[], BrowserContext],
        shot: Callable[[Page, str], Path]) -> None:
    event_id = onsale.create_event(seats=400, queue_policy="fifo",
                                   admission_rate_min=6000, admission_rate_max=6000)
    page = new_context().new_page()

    page.goto("/signup")
    page.fill("input[name=email]", f"journey-{uuid.uuid4().hex[:8]}@example.com")
    page.fill("input[name=password]", "a long enough password")
    shot(page, "signup")
    page.click("#signup-submit")
    page.wait_for_url(lambda url: "/signup" not in url)

    page.goto(f"/events/{event_id}")
    shot(page, "event")
    page.click("#join-queue")
    page.wait_for_url(re.compile(rf"/events/{event_id}/queue"))
    shot(page, "waiting-room")
    page.wait_for_url(re.compile(rf"/events/{event_id}/seats"), timeout=30_000)

    page.wait_for_function("() => window.onsaleSeatmap && window.onsaleSeatmap.version")
    expect(page.locator("#seat-canvas")).to_be_visible()
    page.select_option("#pick-section", index=0)  # the picker: section → row → seat
    page.select_option("#pick-row", index=0)
    free = page.eval_on_selector_all("#pick-seat option:not([disabled])",
                                     "options => options.map(o => o.value)")
    assert len(free) >= 2
    for seat in free[:2]:
        page.select_option("#pick-seat", seat)
        page.click("#pick-add")
    expect(page.locator("#selection li")).to_have_count(2)
    shot(page, "seat-map-selected")
    page.click("#hold-button")

    page.wait_for_url(re.compile(r"/checkout/"))
    shot(page, "checkout")
    fill_card(page, "4242 4242 4242 4242")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/orders/"), timeout=30_000)
    status = page.locator("#order-status")
    expect(status).to_have_attribute("data-status", "CAPTURED", timeout=30_000)
    expect(page.locator("#tickets li")).to_have_count(2, timeout=30_000)
    shot(page, "order-confirmed")
