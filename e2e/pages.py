"""Page objects of the shopper's pages (docs/qa.md): each finds what it needs the way a
person does, by role and accessible name or by label, so a test reads as the steps a
shopper takes and survives a change of markup. Where a page gave something no
accessible name, the page was fixed (the seat list and the tickets: aria-labelledby;
the event page's tiers and the checkout's and order's tables: a caption or a heading;
the waiting room: a region, its status, its timer and the draw; the seat page's gate
and general-admission tiers). The seat map and the checkout are in e2e/pages_seats.py,
the operator console in e2e/pages_console.py."""

from __future__ import annotations

import re
from dataclasses import dataclass

from playwright.sync_api import Locator, Page

from e2e.pages_seats import Checkout, Order, SeatMap, alert, alert_text

__all__ = ["Checkout", "EventPage", "Order", "Queue", "SeatMap", "SignIn", "SignUp", "alert",
           "alert_text", "definition", "page_text"]


def definition(scope: Page | Locator, term: str) -> Locator:
    """What a description list says for ``term`` (its dd)."""
    # ARIA forbids naming a definition, so it is found as the one right after its term.
    return (scope.get_by_role("term").filter(has_text=re.compile(rf"^{re.escape(term)}$"))
            .locator("xpath=following-sibling::dd[1]"))


def page_text(page: Page) -> str:
    """Everything the page says, as a person reads it."""
    return page.locator("body").inner_text()  # the body: the whole page has no role


@dataclass
class SignUp:
    page: Page

    def open(self) -> SignUp:
        self.page.goto("/signup")
        return self

    @property
    def email(self) -> Locator:
        return self.page.get_by_label("Email")

    @property
    def password(self) -> Locator:
        return self.page.get_by_label("Password")

    def submit(self) -> None:
        self.page.get_by_role("button", name="Create account").click()

    def create_account(self, email: str, password: str) -> None:
        self.email.fill(email)
        self.password.fill(password)
        self.submit()
        self.page.wait_for_url(lambda url: "/signup" not in url)


@dataclass
class SignIn:
    page: Page

    def open(self) -> SignIn:
        self.page.goto("/signin")
        return self

    @property
    def email(self) -> Locator:
        return self.page.get_by_label("Email")

    @property
    def password(self) -> Locator:
        return self.page.get_by_label("Password")

    def submit(self) -> None:
        self.page.get_by_role("button", name="Sign in", exact=True).click()

    def sign_in(self, email: str, password: str) -> None:
        """Type and send; where the page goes then is the ?next= it was opened with."""
        self.email.fill(email)
        self.password.fill(password)
        self.submit()


@dataclass
class EventPage:
    page: Page
    event_id: int

    def open(self) -> EventPage:
        self.page.goto(f"/events/{self.event_id}")
        return self

    @property
    def queue_policy(self) -> Locator:
        """The queue policy in words ("first come, first served")."""
        return definition(self.page, "Queue")

    def join_the_queue(self) -> Queue:
        self.page.get_by_role("link", name=re.compile("Join the queue|Enter the sale")).click()
        return Queue(self.page, self.event_id)

    def sign_in_to_join(self) -> SignIn:
        self.page.get_by_role("link", name="Sign in to join the queue").click()
        return SignIn(self.page)

    def places_left(self, tier: str) -> Locator:
        """A general-admission tier's "N left" cell."""
        row = (self.page.get_by_role("table", name="General admission").get_by_role("row")
               .filter(has=self.page.get_by_role("cell", name=tier, exact=True)))
        return row.get_by_role("cell", name=re.compile(r" left$"))

    def how_many(self, tier: str) -> Locator:
        return self.page.get_by_label(f"How many places of {tier}")


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

    @property
    def status(self) -> Locator:
        """The sentence of where the visitor stands."""
        return self.room.get_by_role("status")

    @property
    def position(self) -> Locator:
        return definition(self.room, "Your position")

    def countdown(self, to: str = "The sale opens in") -> Locator:
        """The time left until the sale (or the queue) opens, named by what it counts to."""
        return self.room.get_by_role("timer", name=to)

    @property
    def refresh_note(self) -> Locator:
        """How often the page checks the place by itself."""
        return self.room.get_by_text(re.compile(r"checks your place every \d+ seconds"))

    @property
    def buttons(self) -> Locator:
        return self.room.get_by_role("button")

    @property
    def browser_check(self) -> Locator:
        """The proof of work's progress, while the browser solves it."""
        return self.room.get_by_role("progressbar", name="Browser check progress")

    @property
    def browser_check_result(self) -> Locator:
        return self.room.get_by_text(re.compile(r"^Browser check"))

    @property
    def draw(self) -> Locator:
        """The random draw: the commitment, then the revealed seed and its check."""
        return self.room.get_by_role("region", name="The random draw")

    @property
    def commitment(self) -> Locator:
        """The seed's SHA-256, published before the sale (a code cannot be named: the
        draw's first)."""
        return self.draw.get_by_role("code").first

    @property
    def revealed_seed(self) -> Locator:
        return self.draw.get_by_text(re.compile(r"^Revealed seed:"))

    def wait_until_admitted(self, timeout_ms: float = 30_000) -> SeatMap:
        """The waiting room sends an admitted shopper on to the seat map by itself."""
        self.page.wait_for_url(re.compile(rf"/events/{self.event_id}/seats"),
                               timeout=timeout_ms)
        return SeatMap(self.page)
