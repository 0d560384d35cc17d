"""Page objects of the shopper's pages (docs/qa.md): each finds what it needs the way a
person does, by role and accessible name or by label, so a test reads as the steps a
shopper takes and survives a change of markup. Where a page gave something no
accessible name, the page was fixed (the seat list and the tickets: aria-labelledby)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from playwright.sync_api import Locator, Page, expect


@dataclass
class SignUp:
    page: Page

    def open(self) -> SignUp:
        self.page.goto("/signup")
        return self

    def create_account(self, email: str, password: str) -> None:
        self.page.get_by_label("Email").fill(email)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Create account").click()
        self.page.wait_for_url(lambda url: "/signup" not in url)


@dataclass
class EventPage:
    page: Page
    event_id: int

    def open(self) -> EventPage:
        self.page.goto(f"/events/{self.event_id}")
        return self

    def join_the_queue(self) -> Queue:
        self.page.get_by_role("link", name=re.compile("Join the queue|Enter the sale")).click()
        return Queue(self.page, self.event_id)


@dataclass
class Queue:
    page: Page
    event_id: int

    def open(self) -> Queue:
        self.page.goto(f"/events/{self.event_id}/queue")
        return self

    @property
    def room(self) -> Locator:
        """The waiting room; its ``data-state`` is the visitor's state."""
        return self.page.get_by_role("region", name="Waiting room")

    def wait_until_admitted(self, timeout_ms: float = 30_000) -> SeatMap:
        """The waiting room sends an admitted shopper on to the seat map by itself."""
        self.page.wait_for_url(re.compile(rf"/events/{self.event_id}/seats"),
                               timeout=timeout_ms)
        return SeatMap(self.page)


@dataclass
class SeatMap:
    page: Page

    def wait_until_drawn(self) -> SeatMap:
        self.page.wait_for_function(
            "() => window.onsaleSeatmap && window.onsaleSeatmap.version")
        expect(self.page.get_by_label(re.compile("^Seat map of"))).to_be_visible()
        return self

    @property
    def seats(self) -> Locator:
        """The seats chosen so far (the list under "Your seats")."""
        return self.page.get_by_role("list", name="Your seats").get_by_role("listitem")

    def free_seats_in_first_row(self) -> list[str]:
        self.page.get_by_label("Section", exact=True).select_option(index=0)
        self.page.get_by_label("Row", exact=True).select_option(index=0)
        seat = self.page.get_by_label("Seat", exact=True)
        return [o.get_attribute("value") or "" for o in
                seat.get_by_role("option").all() if o.is_enabled()]

    def add_seat(self, value: str) -> None:
        """Pick a seat with the keyboard picker (section, row and seat chosen before)."""
        self.page.get_by_label("Seat", exact=True).select_option(value)
        self.page.get_by_role("button", name="Add seat").click()

    def hold(self) -> Checkout:
        self.page.get_by_role("button", name="Hold these seats").click()
        self.page.wait_for_url(re.compile(r"/checkout/"))
        return Checkout(self.page)


@dataclass
class Checkout:
    page: Page

    def pay(self, number: str, exp: str = "12/34", cvc: str = "123") -> Order:
        self.page.get_by_label("Card number").fill(number)
        self.page.get_by_label("Expiry (MM/YY)").fill(exp)
        self.page.get_by_label("CVC").fill(cvc)
        self.page.get_by_role("button", name=re.compile("^Pay ")).click()
        self.page.wait_for_url(re.compile(r"/orders/"), timeout=30_000)
        return Order(self.page)


@dataclass
class Order:
    page: Page

    @property
    def status(self) -> Locator:
        return self.page.get_by_role("status")

    @property
    def tickets(self) -> Locator:
        return self.page.get_by_role("list", name="Tickets").get_by_role("listitem")

    def wait_until_paid(self, tickets: int, timeout_ms: float = 30_000) -> None:
        expect(self.status).to_have_attribute("data-status", "CAPTURED", timeout=timeout_ms)
        expect(self.tickets).to_have_count(tickets, timeout=timeout_ms)
