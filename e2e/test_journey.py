"""The whole journey in one browser: sign up → join the queue → admitted → seat
map → two seats → hold → pay with the approving test card → order confirmed
with its tickets."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from e2e.harness import Onsale
from e2e.pages import EventPage, SignUp


def test_sign_up_queue_seats_hold_pay_and_get_tickets(
        onsale: Onsale, new_context: Callable[[], BrowserContext],
        shot: Callable[[Page, str], Path]) -> None:
    event_id = onsale.create_event(seats=400, queue_policy="fifo",
                                   admission_rate_min=6000, admission_rate_max=6000)
    page = new_context().new_page()

    SignUp(page).open().create_account(f"journey-{uuid.uuid4().hex[:8]}@example.com",
                                       "a long enough password")
    event = EventPage(page, event_id).open()
    shot(page, "event")
    queue = event.join_the_queue()
    page.wait_for_url(re.compile(rf"/events/{event_id}/queue"))
    shot(page, "waiting-room")
    seat_map = queue.wait_until_admitted().wait_until_drawn()

    free = seat_map.free_seats_in_first_row()  # the picker: section, row, seat
    assert len(free) >= 2
    for seat in free[:2]:
        seat_map.add_seat(seat)
    expect(seat_map.seats).to_have_count(2)
    shot(page, "seat-map-selected")
    checkout = seat_map.hold()
    shot(page, "checkout")
    order = checkout.pay("4242 4242 4242 4242")
    order.wait_until_paid(tickets=2)
    shot(page, "order-confirmed")
