"""Page objects of the operator console (docs/console.md): sign-in, the events, the event
page and the fairness lab, found by role, accessible name and label as e2e/pages.py's
are. The pages got the names the tests need: the events table (its heading), the event
page's article, the admission and controller states and the audit result (role status),
each live figure (a group named by its label), the lab's results region, its table
caption, its charts (role img) and its downloads (links named for the file)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Download, Locator, Page, expect


@dataclass
class ConsoleSignIn:
    page: Page

    def sign_in(self, token: str) -> None:
        self.page.get_by_label("Operator token").fill(token)
        self.page.get_by_role("button", name="Open the console").click()

    @property
    def alert(self) -> Locator:
        return self.page.get_by_role("alert")


@dataclass
class ConsoleEvents:
    """The console's first page: a table of the events."""

    page: Page

    def open_event(self, name: str) -> ConsoleEvent:
        (self.page.get_by_role("table", name="Events")
         .get_by_role("link", name=name, exact=True).click())
        return ConsoleEvent(self.page)

    def create(self, name: str, *, seats: str, venue: str, zone: str, onsale: str,
               policy: str) -> ConsoleEvent:
        """A new event from the "New event" form (``onsale``: the venue's wall time,
        YYYY-MM-DDTHH:MM); the console then opens its page."""
        form = self.page.get_by_role("region", name="New event")
        form.get_by_label("Name").fill(name)
        form.get_by_label("Seats").fill(seats)
        form.get_by_label("Venue", exact=True).fill(venue)
        form.get_by_label("Venue time zone").fill(zone)
        form.get_by_label("On sale from (venue time; blank: now)").fill(onsale)
        form.get_by_label("Queue policy").select_option(label=policy)
        form.get_by_role("button", name="Create the event").click()
        return ConsoleEvent(self.page)


@dataclass
class ConsoleEvent:
    page: Page

    @property
    def article(self) -> Locator:
        return self.page.get_by_role("article")

    def wait_until_loaded(self) -> ConsoleEvent:
        expect(self.article).to_have_attribute("data-loaded", "1")
        return self

    def region(self, name: str) -> Locator:
        return self.page.get_by_role("region", name=name)

    @property
    def policy(self) -> Locator:
        return self.region("Queue policy")

    def change_policy(self, label: str) -> None:
        self.policy.get_by_role("combobox", name="Queue policy").select_option(label=label)
        self.policy.get_by_role("button", name="Change policy").click()

    @property
    def admission(self) -> Locator:
        return self.region("Admission")

    @property
    def admission_state(self) -> Locator:
        return self.admission.get_by_role("status", name="Admission state")

    @property
    def controller_state(self) -> Locator:
        return self.admission.get_by_role("status", name="Controller state")

    def pause(self) -> None:
        self.admission.get_by_role("button", name="Pause admission").click()

    def resume(self) -> None:
        self.admission.get_by_role("button", name="Resume admission").click()

    @property
    def rate_max(self) -> Locator:
        return self.page.get_by_label("Rate maximum (per minute)")

    @property
    def risk(self) -> Locator:
        return self.region("Bot risk")

    @property
    def risk_bands(self) -> Locator:
        return self.risk.get_by_role("status", name="Bot risk bands")

    def set_risk(self, raised: str = "", high: str = "", refused: str = "") -> None:
        """The thresholds as typed (blank: that band off), saved."""
        for label, value in (("More proof of work from score", raised),
                             ("Much more proof of work from score", high),
                             ("Refuse the join from score", refused)):
            self.risk.get_by_label(label, exact=True).fill(value)
        self.risk.get_by_role("button", name="Save risk thresholds").click()

    def figure(self, name: str) -> Locator:
        """One live figure: its label and value (the group's text)."""
        return self.region(re.compile("^Live figures")).get_by_role("group", name=name)

    def sparkline(self, name: str) -> Locator:
        # The sparkline is a drawing with no role of its own (aria-hidden: the value
        # beside it says the same); the test reads how many points it drew.
        return self.figure(name).locator("svg")

    @property
    def audit(self) -> Locator:
        return self.region("Invariant audit").get_by_role("status", name="Audit result")

    def run_the_audit(self) -> None:
        self.region("Invariant audit").get_by_role("button", name="Run the audit again").click()


@dataclass
class FairnessLab:
    page: Page

    def field(self, label: str) -> Locator:
        return self.page.get_by_label(label, exact=True)

    def arrivals_as_counts(self) -> None:
        self.page.get_by_role("radio", name="counts per second").check()

    def arrivals_from_csv(self, path: Path, opened_at: str = "") -> None:
        """Upload a CSV of join times, the sale opening at ``opened_at``."""
        self.page.get_by_role("radio", name="a CSV of join times").check()
        self.field("Arrivals CSV file").set_input_files(path)
        self.field("Sale opened at (ISO 8601 or Unix seconds)").fill(opened_at)

    def one_place_per_account(self, on: bool) -> None:
        self.page.get_by_role("checkbox", name=re.compile("^one place per account")).set_checked(on)

    def simulate(self) -> None:
        self.page.get_by_role("button", name="Simulate both policies").click()

    @property
    def results(self) -> Locator:
        return self.page.get_by_role("region", name="Results")

    @property
    def summary_rows(self) -> Locator:
        """One row of cells per policy (not the row of headers)."""
        return (self.page.get_by_role("table", name="The two policies compared")
                .get_by_role("row").filter(has=self.page.get_by_role("cell")))

    @property
    def note(self) -> Locator:
        """The scenario simulated, in words ("20,000 people over 20 min, ...")."""
        return self.results.get_by_text(re.compile(r"^[\d,]+ people over "))

    def chart(self, name: str) -> Locator:
        return self.results.get_by_role("img", name=re.compile("^" + re.escape(name)))

    def chart_marks(self, name: str) -> Locator:
        # The drawing's own parts (a series' line, a bar) have no role: found by class.
        return self.chart(name).locator(".series, .bar")

    @property
    def downloads(self) -> Locator:
        return self.results.get_by_role("list", name="Downloads").get_by_role("link")

    def download(self, name: str) -> Download:
        """Click the download link named ``name`` ("Summary (CSV)") and take the file."""
        with self.page.expect_download() as started:
            self.results.get_by_role("link", name=name, exact=True).click()
        return started.value
