"""The operator console in a real browser against a real ``onsale dev``:
sign-in with the admin token, the live figures and their charts, the frozen
policy in words, pause and resume seen from a shopper's waiting room, the
audit, and the fairness lab (web/templates/ops/, web/static/js/ops*.js,
fairness.js, charts.js)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from e2e.harness import Onsale

Shot = Callable[[Page, str], Path]
Shopper = Callable[[], tuple[Page, str]]
ADMITTED_WITHIN = 30_000  # ms: the waiting room polls every few seconds near the front
TWO_OR_MORE = re.compile(r"^([2-9]|\d\d+)$")


def sign_in(page: Page, token: str, start: str = "/ops/") -> None:
    page.goto(start)
    expect(page).to_have_url(re.compile(r"/ops/signin\?next="))
    page.fill("#admin-token", token)
    page.click("#ops-signin button[type=submit]")
    expect(page).to_have_url(re.compile(re.escape(start) + "$"))


def test_the_operator_watches_pauses_and_resumes_a_sale(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shopper: Shopper,
        shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="fifo", admission_rate_min=6000,
                                   admission_rate_max=6000)
    ops = new_context().new_page()

    ops.goto("/ops/")
    expect(ops).to_have_url(re.compile(r"/ops/signin"))
    ops.fill("#admin-token", "certainly-not-the-token")
    ops.click("#ops-signin button[type=submit]")
    expect(ops.locator("#flash")).to_contain_text("operator token was not accepted")
    expect(ops.locator("#flash")).not_to_contain_text("401")
    shot(ops, "signin-refused")
    ops.fill("#admin-token", onsale.admin_token)
    ops.click("#ops-signin button[type=submit]")
    expect(ops).to_have_url(re.compile(r"/ops/$"))
    shot(ops, "events")

    ops.click(f'a[href="/ops/events/{event_id}"]')
    root = ops.locator("#ops-event")
    expect(root).to_have_attribute("data-loaded", "1")
    expect(ops.locator("#policy-words")).to_have_text("first come, first served")
    expect(ops.locator("#policy-frozen")).to_contain_text("Frozen: the sale is open")
    expect(ops.locator("#rate-max")).to_have_value("6000")
    expect(ops.locator("#audit-summary")).to_have_text(re.compile(r"All \d+ invariant checks pass"))
    # the figures are refreshed and drawn as rolling sparklines
    queued = ops.locator('[data-figure="queued"]')
    expect(queued.locator("svg")).to_have_attribute("data-points", TWO_OR_MORE, timeout=15_000)
    expect(ops.locator('[data-figure="cdc_lag"] .value')).not_to_have_text("–")
    expect(ops.locator('[data-figure="payment_unknowns"] .value')).to_have_text("0")

    # the policy is frozen once the sale is open: the refusal is a sentence
    ops.select_option("#policy-select", "random")
    ops.click("#policy-save")
    expect(ops.locator("#flash")).to_contain_text(
        "The queue policy cannot change once the sale is open.")

    ops.click("#pause")
    expect(ops.locator("#admission-state")).to_have_attribute("data-state", "paused")
    expect(ops.locator("#resume")).to_be_enabled()
    state = onsale.admin("GET", f"/api/ops/events/{event_id}/queue").json()
    assert state["settings"]["paused"] is True

    visitor, _ = shopper()
    visitor.goto(f"/events/{event_id}/queue")
    room = visitor.locator("#waiting-room")
    expect(room).to_have_attribute("data-state", "paused")
    expect(room).to_contain_text("paused")
    shot(visitor, "waiting-room-paused")
    expect(queued.locator(".value")).to_have_text("1", timeout=15_000)
    expect(ops.locator("#controller-state")).to_contain_text("paused")
    shot(ops, "event-paused")

    ops.click("#resume")
    expect(ops.locator("#admission-state")).to_have_attribute("data-state", "running")
    visitor.wait_for_url(f"**/events/{event_id}/seats", timeout=ADMITTED_WITHIN)
    expect(ops.locator('[data-figure="active"] .value')).to_have_text("1", timeout=15_000)
    ops.click("#audit-run")
    expect(ops.locator("#audit-result")).to_have_attribute("data-ok", "1")
    shot(ops, "event-running")


def test_the_fairness_lab_runs_and_draws_its_charts(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="fifo", seats=300, max_tickets_per_account=4)
    lab = new_context().new_page()
    sign_in(lab, onsale.admin_token, f"/ops/fairness?event={event_id}")
    expect(lab.locator("#event_id")).to_have_value(str(event_id))
    expect(lab.locator("#seats")).to_have_value("300")

    lab.fill("#visitors", "20000")
    lab.fill("#seconds", "1200")
    lab.fill("#onsale_second", "600")
    lab.fill("#bot_share_percent", "5")
    lab.fill("#bot_devices", "10")
    lab.uncheck("input[name=dedupe_accounts]")
    lab.click("#lab-run")
    results = lab.locator("#lab-results")
    expect(results).to_have_attribute("data-state", "ready", timeout=30_000)
    expect(lab.locator("#lab-summary tr")).to_have_count(2)
    for chart in ("chart-waits", "chart-cohort-seats", "chart-histogram", "chart-seats",
                  "chart-admissions"):
        expect(lab.locator(f"#{chart}")).to_have_attribute("data-points", TWO_OR_MORE)
        expect(lab.locator(f"#{chart} .series, #{chart} .bar").first).to_be_attached()
    expect(lab.locator("#lab-note")).to_contain_text("20,000 people")
    shot(lab, "fairness-lab")

    lab.check("input[name=profile][value=counts]")
    lab.fill("#arrivals", "10, 20, -5")
    lab.click("#lab-run")
    expect(lab.locator("#flash")).to_contain_text("arrivals must be a list")
    expect(results).to_have_attribute("data-state", "error")
    shot(lab, "fairness-lab-bad-input")
