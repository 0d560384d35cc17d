"""Page objects of the seat page, the checkout and the order (docs/qa.md), found by role,
accessible name and label as e2e/pages.py's are; e2e/pages.py re-exports them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from playwright.sync_api import Locator, Page, expect


def alert(page: Page) -> Locator:
    """The page's alert: the sentence of what went wrong (or right)."""
    return page.get_by_role("alert")


def alert_text(page: Page) -> str:
    """What the alert says now, without waiting ("" while it is hidden)."""
    return " ".join(alert(page).all_inner_texts())


@dataclass
class SeatMap:
    page: Page

    def open(self, event_id: int) -> SeatMap:
        self.page.goto(f"/events/{event_id}/seats")
        return self

    def wait_until_drawn(self) -> SeatMap:
        self.page.wait_for_function(
            "() => window.onsaleSeatmap && window.onsaleSeatmap.version")
        expect(self.canvas).to_be_visible()
        return self

    def wait_until_live(self, timeout_ms: float = 30_000, *, seats: bool = True) -> SeatMap:
        """Drawn (when the event has seats) and following the live feed."""
        drawn = " && window.onsaleSeatmap.drawn > 0" if seats else ""
        self.page.wait_for_function(
            f"() => window.onsaleSeatmap{drawn} && window.onsaleSeatmap.live === 'live'",
            timeout=timeout_ms)
        return self

    @property
    def canvas(self) -> Locator:
        """The drawing of every seat."""
        return self.page.get_by_label(re.compile("^Seat map of"))

    @property
    def live_status(self) -> Locator:
        return self.page.get_by_role("status")

    @property
    def legend(self) -> Locator:
        return self.page.get_by_role("list", name="Legend")

    def zoom_in(self) -> None:
        self.page.get_by_role("button", name="Zoom in").click()

    def whole_venue(self) -> None:
        self.page.get_by_role("button", name="Whole venue").click()

    @property
    def gate(self) -> Locator:
        """What the page says instead of the map to a shopper it does not let in."""
        return self.page.get_by_role("region", name="Access to the seats")

    # -- the keyboard picker and the selection ------------------------------------

    @property
    def section(self) -> Locator:
        return self.page.get_by_label("Section", exact=True)

    @property
    def row(self) -> Locator:
        return self.page.get_by_label("Row", exact=True)

    @property
    def seat(self) -> Locator:
        return self.page.get_by_label("Seat", exact=True)

    @property
    def add_button(self) -> Locator:
        return self.page.get_by_role("button", name="Add seat")

    @property
    def selection(self) -> Locator:
        """The list under "Your seats"."""
        return self.page.get_by_role("list", name="Your seats")

    @property
    def seats(self) -> Locator:
        """The seats chosen so far (the list under "Your seats")."""
        return self.selection.get_by_role("listitem")

    @property
    def total(self) -> Locator:
        """"Total: 80.00 USD (2 of up to 6 seats)" under the seats chosen."""
        return (self.page.get_by_role("region", name="Your seats")
                .get_by_text(re.compile(r"^Total:")))

    def free_seats_in_first_row(self) -> list[str]:
        self.section.select_option(index=0)
        self.row.select_option(index=0)
        return [o.get_attribute("value") or "" for o in
                self.seat.get_by_role("option").all() if o.is_enabled()]

    def add_seat(self, value: str) -> None:
        """Pick a seat with the keyboard picker (section, row and seat chosen before)."""
        self.seat.select_option(value)
        self.add_button.click()

    @property
    def hold_button(self) -> Locator:
        return self.page.get_by_role("button", name="Hold these seats")

    def hold(self) -> Checkout:
        self.hold_button.click()
        self.page.wait_for_url(re.compile(r"/checkout/"))
        return Checkout(self.page)

    def hold_best_available(self, quantity: int, *, together: bool) -> Checkout:
        form = self.page.get_by_role("form", name="Best available")
        form.get_by_label("How many seats").select_option(str(quantity))
        form.get_by_role("checkbox", name=re.compile("^Seats together")).set_checked(together)
        form.get_by_role("button", name="Find the best seats").click()
        self.page.wait_for_url(re.compile(r"/checkout/"))
        return Checkout(self.page)

    # -- general admission ------------------------------------------------------------

    def tier(self, name: str) -> Locator:
        """A general-admission tier: its places left, how many to hold, Hold places."""
        return (self.page.get_by_role("region", name="General admission")
                .get_by_role("form", name=name, exact=True))

    def places_left(self, tier: str) -> Locator:
        """"40.00 USD per place · 47 left"."""
        return self.tier(tier).get_by_text(re.compile(r"[\d,]+ left$"))

    def places_left_now(self, tier: str) -> int:
        found = re.search(r"([\d,]+) left$", self.places_left(tier).inner_text())
        assert found, self.places_left(tier).inner_text()
        return int(found.group(1).replace(",", ""))

    def how_many(self, tier: str) -> Locator:
        return self.tier(tier).get_by_label("How many places")

    def hold_places_button(self, tier: str) -> Locator:
        return self.tier(tier).get_by_role("button", name="Hold places")


@dataclass
class Checkout:
    page: Page

    @property
    def countdown(self) -> Locator:
        return self.page.get_by_role("timer", name="Time left to pay")

    @property
    def held(self) -> Locator:
        """The held seats (or places): the table's rows of cells, not its headers."""
        return (self.page.get_by_role("table", name="Your hold").get_by_role("row")
                .filter(has=self.page.get_by_role("cell")))

    @property
    def total(self) -> Locator:
        """The "Total" row; its accessible name is "Total 300.00 USD"."""
        return (self.page.get_by_role("table", name="Your hold")
                .get_by_role("row", name=re.compile("^Total ")))

    @property
    def card_number(self) -> Locator:
        return self.page.get_by_label("Card number")

    @property
    def expiry(self) -> Locator:
        return self.page.get_by_label("Expiry (MM/YY)")

    @property
    def cvc(self) -> Locator:
        return self.page.get_by_label("CVC")

    @property
    def pay_button(self) -> Locator:
        return self.page.get_by_role("button", name=re.compile("^Pay "))

    def use_test_card(self, number: str) -> None:
        """Click a test card of the simulator's list: it fills the card fields."""
        self.page.get_by_role("button", name=number, exact=True).click()

    def enter_card(self, number: str, exp: str = "12/34", cvc: str = "123") -> None:
        self.card_number.fill(number)
        self.expiry.fill(exp)
        self.cvc.fill(cvc)

    def press_pay(self) -> None:
        self.pay_button.click()

    def pay(self, number: str, exp: str = "12/34", cvc: str = "123") -> Order:
        self.enter_card(number, exp, cvc)
        self.press_pay()
        self.page.wait_for_url(re.compile(r"/orders/"), timeout=30_000)
        return Order(self.page)


@dataclass
class Order:
    page: Page

    @property
    def status(self) -> Locator:
        return self.page.get_by_role("status")

    @property
    def following(self) -> Locator:
        """The note shown while the page still follows the payment."""
        return self.status.get_by_text("This page updates by itself.")

    @property
    def amount(self) -> Locator:
        """The "Amount" row; its accessible name is "Amount 300.00 USD"."""
        return (self.page.get_by_role("table", name="Your order")
                .get_by_role("row", name=re.compile("^Amount ")))

    @property
    def tickets(self) -> Locator:
        return self.page.get_by_role("list", name="Tickets").get_by_role("listitem")

    def ticket_codes(self) -> list[str]:
        return self.tickets.get_by_role("code").all_inner_texts()

    def wait_until_paid(self, tickets: int, timeout_ms: float = 30_000) -> None:
        expect(self.status).to_have_attribute("data-status", "CAPTURED", timeout=timeout_ms)
        expect(self.tickets).to_have_count(tickets, timeout=timeout_ms)


@dataclass
class MyOrders:
    """"My orders" (/orders), reached from the account menu on any page."""

    page: Page

    def open_from_menu(self) -> MyOrders:
        self.page.get_by_role("navigation").get_by_role("link", name="My orders").click()
        self.page.wait_for_url("**/orders")
        return self

    @property
    def table(self) -> Locator:
        return self.page.get_by_role("table", name="Your orders, newest first")

    def order(self, event_name: str) -> Locator:
        """The row of the order for ``event_name`` (its header cell names the event)."""
        return self.table.get_by_role("row").filter(
            has=self.page.get_by_role("rowheader", name=re.compile(re.escape(event_name))))

    def state(self, event_name: str) -> Locator:
        return self.order(event_name).get_by_role("status")

    def open(self, event_name: str) -> None:
        self.order(event_name).get_by_role("link", name=event_name).click()
