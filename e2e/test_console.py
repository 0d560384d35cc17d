"""The operator console in a real browser against a real ``onsale dev``:
sign-in with the admin token, the live figures and their charts, the frozen
policy in words, pause and resume seen from a shopper's waiting room, the
audit, and the fairness lab, on a shaped crowd and on an uploaded CSV with its
downloads (web/templates/ops/, web/static/js/ops*.js, fairness.js, charts.js)."""

from __future__ import annotations

import csv
import re
import uuid
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from e2e.harness import Onsale
from e2e.pages import Queue
from e2e.pages_console import ConsoleEvents, ConsoleSignIn, FairnessLab

Shot = Callable[[Page, str], Path]
Shopper = Callable[[], tuple[Page, str]]
ADMITTED_WITHIN = 30_000  # ms: the waiting room polls every few seconds near the front
TWO_OR_MORE = re.compile(r"^([2-9]|\d\d+)$")


def sign_in(page: Page, token: str, start: str = "/ops/") -> None:
    page.goto(start)
    expect(page).to_have_url(re.compile(r"/ops/signin\?next="))
    ConsoleSignIn(page).sign_in(token)
    expect(page).to_have_url(re.compile(re.escape(start) + "$"))


def test_the_operator_watches_pauses_and_resumes_a_sale(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shopper: Shopper,
        shot: Shot) -> None:
    name = f"Console night {uuid.uuid4().hex[:6]}"
    event_id = onsale.create_event(name=name, queue_policy="fifo", admission_rate_min=6000,
                                   admission_rate_max=6000)
    ops = new_context().new_page()

    ops.goto("/ops/")
    expect(ops).to_have_url(re.compile(r"/ops/signin"))
    signin = ConsoleSignIn(ops)
    signin.sign_in("certainly-not-the-token")
    expect(signin.alert).to_contain_text("operator token was not accepted")
    expect(signin.alert).not_to_contain_text("401")
    shot(ops, "signin-refused")
    signin.sign_in(onsale.admin_token)
    expect(ops).to_have_url(re.compile(r"/ops/$"))
    shot(ops, "events")

    console = ConsoleEvents(ops).open_event(name).wait_until_loaded()
    expect(console.policy.get_by_text("first come, first served", exact=True)).to_be_visible()
    expect(console.policy).to_contain_text("Frozen: the sale is open")
    expect(console.rate_max).to_have_value("6000")
    expect(console.audit).to_contain_text(re.compile(r"All \d+ invariant checks pass"))
    # the figures are refreshed and drawn as rolling sparklines
    expect(console.sparkline("Queued")).to_have_attribute("data-points", TWO_OR_MORE,
                                                          timeout=15_000)
    expect(console.figure("Seat-map CDC lag")).not_to_have_text(re.compile(r"–\s*$"))
    expect(console.figure("Payments unknown")).to_have_text(re.compile(r"\s0\s*$"))

    # the policy is frozen once the sale is open: the refusal is a sentence
    console.change_policy("random draw at the opening (random)")
    expect(ops.get_by_role("alert")).to_contain_text(
        "The queue policy cannot change once the sale is open.")

    # the bot-risk bands: off until set; thresholds that do not rise are refused in words
    expect(console.risk_bands).to_contain_text("Off: every join is treated as low risk")
    console.set_risk(raised="60", high="40")
    expect(ops.get_by_role("alert")).to_contain_text("The risk thresholds must rise")
    console.set_risk(raised="30", high="60", refused="90")
    expect(console.risk_bands).to_have_text(
        "Scores of 30 or more: more proof of work; 60 or more: much more; "
        "90 or more: refused.")
    risk = onsale.admin("GET", f"/api/ops/events/{event_id}/queue").json()["settings"]["risk"]
    assert risk == {"raised": 30, "high": 60, "refused": 90}
    console.set_risk()  # all blank: off again, so the shopper below joins as anyone would
    expect(console.risk_bands).to_contain_text("Off:")

    console.pause()
    expect(console.admission_state).to_have_attribute("data-state", "paused")
    expect(console.admission.get_by_role("button", name="Resume admission")).to_be_enabled()
    state = onsale.admin("GET", f"/api/ops/events/{event_id}/queue").json()
    assert state["settings"]["paused"] is True

    visitor, _ = shopper()
    room = Queue(visitor, event_id).open().room
    expect(room).to_have_attribute("data-state", "paused")
    expect(room).to_contain_text("paused")
    shot(visitor, "waiting-room-paused")
    expect(console.figure("Queued")).to_have_text(re.compile(r"\s1\s*$"), timeout=15_000)
    expect(console.controller_state).to_contain_text("paused")
    shot(ops, "event-paused")

    console.resume()
    expect(console.admission_state).to_have_attribute("data-state", "running")
    visitor.wait_for_url(f"**/events/{event_id}/seats", timeout=ADMITTED_WITHIN)
    expect(console.figure("Active shoppers")).to_have_text(re.compile(r"\s1\s*$"), timeout=15_000)
    console.run_the_audit()
    expect(console.audit).to_have_attribute("data-ok", "1")
    shot(ops, "event-running")


def test_the_operator_creates_an_event_at_its_venues_time(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shot: Shot) -> None:
    """The sale opens at 03:30 in Berlin on the night the clocks go forward: the
    console sends 01:30 UTC, and every page says 03:30 CEST."""
    name = f"Berlin night {uuid.uuid4().hex[:6]}"
    ops = new_context().new_page()
    sign_in(ops, onsale.admin_token)
    console = ConsoleEvents(ops).create(
        name, seats="120", venue="Philharmonie", zone="Europe/Berlin",
        onsale="2030-03-31T03:30", policy="first come, first served (fifo)")
    console.wait_until_loaded()
    expect(console.article).to_contain_text("Philharmonie (Europe/Berlin)")
    expect(console.article).to_contain_text("on sale Sun 31 Mar 2030, 03:30 CEST")
    event_id = int(ops.url.rstrip("/").rsplit("/", 1)[1])
    doc = onsale.admin("GET", f"/api/events/{event_id}").json()
    assert doc["time_zone"] == "Europe/Berlin" and doc["seat_count"] == 120
    assert doc["onsale_at"].startswith("2030-03-31T01:30:00")
    shot(ops, "event-created-in-berlin")


def test_the_fairness_lab_runs_and_draws_its_charts(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="fifo", seats=300, max_tickets_per_account=4)
    page = new_context().new_page()
    sign_in(page, onsale.admin_token, f"/ops/fairness?event={event_id}")
    lab = FairnessLab(page)
    expect(lab.field("Take seats, limits, rates and cap from")).to_have_value(str(event_id))
    expect(lab.field("Seats")).to_have_value("300")

    lab.field("People").fill("20000")
    lab.field("Over (seconds)").fill("1200")
    lab.field("Sale opens at second").fill("600")
    lab.field("Share of bots (%)").fill("5")
    lab.field("Devices per bot").fill("10")
    lab.one_place_per_account(False)
    lab.simulate()
    expect(lab.results).to_have_attribute("data-state", "ready", timeout=30_000)
    expect(lab.summary_rows).to_have_count(2)
    for name in ("Wait after the opening by arrival cohort",
                 "Share of people who get seats", "Distribution of waits",
                 "Seats reached by multi-device visitors", "Admissions over time"):
        chart = lab.chart(name)
        expect(chart).to_have_attribute("data-points", TWO_OR_MORE)
        expect(lab.chart_marks(name).first).to_be_attached()  # a series or a bar drawn
    expect(lab.note).to_contain_text("20,000 people")
    shot(page, "fairness-lab")

    lab.arrivals_as_counts()
    lab.field("People arriving each second, from the queue opening (commas or spaces)").fill(
        "10, 20, -5")
    lab.simulate()
    expect(page.get_by_role("alert")).to_contain_text("arrivals[2]: expected `int` >= 0")
    expect(lab.results).to_have_attribute("data-state", "error")
    shot(page, "fairness-lab-bad-input")


SAMPLE = Path(__file__).resolve().parents[1] / "docs" / "fairness" / "sample-arrivals.csv"


def test_the_fairness_lab_runs_on_an_uploaded_csv_and_offers_its_files(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shot: Shot,
        tmp_path: Path) -> None:
    page = new_context().new_page()
    sign_in(page, onsale.admin_token, "/ops/fairness")
    lab = FairnessLab(page)
    lab.field("Seats").fill("1500")
    lab.arrivals_from_csv(SAMPLE, "2026-01-01T10:00:00Z")
    lab.simulate()
    expect(lab.results).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(lab.summary_rows).to_have_count(2)
    expect(lab.note).to_contain_text("2,619 people")  # the sample's accounts
    expect(lab.downloads).to_have_count(5)
    shot(page, "fairness-lab-upload")

    summary = lab.download("Summary (CSV)")
    assert summary.suggested_filename == "summary.csv"
    saved = tmp_path / "summary.csv"
    summary.save_as(saved)
    rows = list(csv.DictReader(saved.open()))
    assert [r["policy"] for r in rows] == ["fifo", "random"]
    assert all(r["people"] == "2619" and r["seats"] == "1500" for r in rows)
    chart = lab.download("Waits chart (PNG)")
    chart.save_as(tmp_path / "waits.png")
    assert (tmp_path / "waits.png").read_bytes().startswith(b"\x89PNG")

    bad = tmp_path / "bad.csv"
    bad.write_text("at\n2026-01-01T10:00:00Z\nyesterday\n")
    lab.arrivals_from_csv(bad)
    lab.simulate()
    expect(page.get_by_role("alert")).to_contain_text("line 3:")
    expect(lab.results).to_have_attribute("data-state", "error")
