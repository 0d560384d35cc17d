"""The waiting room in a real browser against a real ``onsale dev``: the
place survives reloads and tabs, a copied admission is refused, pause and
resume, the proof of work, the sale-not-open countdown and the random draw
(web/templates/shop/queue.html, web/static/js/queue.js)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import BrowserContext, Page, expect

from e2e.harness import Onsale, wait_for
from e2e.pages import EventPage, Queue, SeatMap

Shot = Callable[[Page, str], Path]
Shopper = Callable[[], tuple[Page, str]]
ADMITTED_WITHIN = 30_000  # ms: a poll every 5 s near the front, plus the admitter's tick


def at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def join_by_api(onsale: Onsale, event_id: int, body: Any = None) -> httpx.Response:
    """A new account joins through the API (someone ahead in the line)."""
    _, _, cookie = onsale.new_account()
    with onsale.http() as c:
        c.cookies.set(onsale.cookie_name, cookie)
        return c.post(f"/api/events/{event_id}/queue", json=body)


def api_place(page: Page, event_id: int) -> Any:
    """The queue's answer to this browser's cookies (the ticket the page holds)."""
    r = page.request.get(f"/api/events/{event_id}/queue")
    assert r.status == 200, r.text()
    return r.json()


def test_reload_and_a_second_tab_keep_the_place(
        onsale: Onsale, shopper: Shopper, shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="fifo", onsale_at=at(3600))
    for _ in range(2):
        assert join_by_api(onsale, event_id).status_code == 200
    page, _ = shopper()
    event = EventPage(page, event_id).open()
    expect(event.queue_policy).to_have_text("first come, first served")
    shot(page, "event")
    queue = event.join_the_queue()
    expect(queue.room).to_have_attribute("data-state", "prequeue")
    expect(queue.position).to_have_text("3")
    expect(queue.status).to_contain_text("The sale has not opened yet")
    expect(queue.countdown()).to_contain_text("59 min")
    expect(queue.refresh_note).to_contain_text("seconds")
    expect(queue.buttons).to_have_count(0)  # no button to press while in line
    expect(queue.browser_check).to_be_hidden()
    first = api_place(page, event_id)
    assert first["place"] == 3 and first["state"] == "prequeue"
    shot(page, "waiting-room")

    page.reload()
    expect(queue.room).to_have_attribute("data-state", "prequeue")
    expect(queue.position).to_have_text("3")

    second = Queue(page.context.new_page(), event_id).open()
    expect(second.room).to_have_attribute("data-state", "prequeue")
    expect(second.position).to_have_text("3")
    shot(second.page, "second-tab")

    again = api_place(page, event_id)
    assert again["place"] == 3 and again["ticket"] == first["ticket"]
    rejoin = page.request.post(f"/api/events/{event_id}/queue", data={})
    assert rejoin.status == 200 and rejoin.json()["place"] == 3  # joining is idempotent


def test_the_sale_not_open_countdown_runs_down_then_admits(
        onsale: Onsale, shopper: Shopper, shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="fifo", onsale_at=at(12),
                                   admission_rate_min=6000, admission_rate_max=6000)
    page, _ = shopper()
    queue = Queue(page, event_id).open()
    expect(queue.room).to_have_attribute("data-state", "prequeue")
    value = queue.countdown("The sale opens in")  # named by its label: what it counts to
    expect(value).to_have_text(re.compile(r"^\d+ s$"))
    before = int(value.inner_text().split()[0])
    page.wait_for_timeout(2200)
    after = int(value.inner_text().split()[0])
    assert 0 < before - after <= 3, (before, after)
    expect(value).to_have_accessible_name("The sale opens in")
    shot(page, "countdown")
    page.wait_for_url(f"**/events/{event_id}/seats", timeout=ADMITTED_WITHIN + 12_000)
    assert any(c["name"] == f"onsale_admission_{event_id}" for c in page.context.cookies())


def test_a_copied_admission_token_is_refused_in_another_account(
        onsale: Onsale, shopper: Shopper, new_context: Callable[[], BrowserContext],
        shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="passthrough")
    owner, _ = shopper()
    event = EventPage(owner, event_id).open()
    expect(event.queue_policy).to_have_text("no queue: straight in")
    event.join_the_queue()
    owner.wait_for_url(f"**/events/{event_id}/seats")
    name = f"onsale_admission_{event_id}"
    token = next(c["value"] for c in owner.context.cookies() if c["name"] == name)
    assert owner.request.get(f"/api/events/{event_id}/seatmap").status == 200

    thief, _ = shopper()
    thief.context.add_cookies([{"name": name, "value": token, "url": onsale.base_url}])
    r = thief.request.get(f"/api/events/{event_id}/seatmap")
    assert r.status == 403 and r.json()["code"] == "admission_wrong_account"
    EventPage(thief, event_id).open()
    shown = thief.evaluate("""async (id) => {
        const { api } = await import("/static/js/api.js");
        try { await api(`/api/events/${id}/seatmap`); return "no error"; }
        catch (e) { return e.sentence; }
    }""", event_id)
    assert shown == ("This access belongs to another account. Please join the queue with "
                     "your own account.")
    # And the seat map page itself: no map, the sentence, a way to the queue.
    gate = SeatMap(thief).open(event_id).gate
    gate.wait_for(state="visible")
    assert "another account" in gate.inner_text()
    assert thief.evaluate("window.onsaleSeatmap.version") is None
    shot(thief, "other-account")
    # The owner's own browser still shops with it.
    owner.reload()
    SeatMap(owner).wait_until_drawn()


def test_paused_admission_is_shown_then_visitors_are_admitted_on_resume(
        onsale: Onsale, shopper: Shopper, shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="fifo", admission_rate_min=6000,
                                   admission_rate_max=6000)
    paused = onsale.admin("POST", f"/api/ops/events/{event_id}/queue/pause")
    assert paused.status_code == 200, paused.text
    queues = [Queue(shopper()[0], event_id) for _ in range(2)]
    for queue in queues:
        queue.open()
    for queue in queues:
        expect(queue.room).to_have_attribute("data-state", "paused")
        expect(queue.room).to_contain_text("paused")
        expect(queue.position).to_have_text(re.compile(r"^[12]$"))
    shot(queues[0].page, "paused")
    resumed = onsale.admin("POST", f"/api/ops/events/{event_id}/queue/resume")
    assert resumed.status_code == 200, resumed.text
    for queue in queues:
        queue.wait_until_admitted(timeout_ms=ADMITTED_WITHIN)


def test_the_proof_of_work_is_solved_in_the_page(
        onsale: Onsale, shopper: Shopper, shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="fifo", onsale_at=at(3600), pow_difficulty=16)
    refused = join_by_api(onsale, event_id)
    assert refused.status_code == 403 and refused.json()["code"] == "pow_required"
    page, _ = shopper()
    queue = Queue(page, event_id).open()
    expect(queue.room).not_to_have_attribute("data-state", "joining", timeout=15_000)
    if queue.room.get_attribute("data-state") == "solving":  # usually: about 2^16 hashes
        shot(page, "pow-solving")
    expect(queue.room).to_have_attribute("data-state", "prequeue", timeout=60_000)
    expect(queue.browser_check_result).to_contain_text("Browser check passed")
    expect(queue.position).to_have_text("1")
    shot(page, "pow-solved")
    page.reload()  # the ticket is kept: no second check for this browser
    expect(queue.room).to_have_attribute("data-state", "prequeue")
    expect(queue.browser_check_result).to_be_hidden()


def test_random_draw_commitment_then_the_revealed_seed(
        onsale: Onsale, shopper: Shopper, shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="random", onsale_at=at(8),
                                   admission_rate_min=6000, admission_rate_max=6000)
    with onsale.http() as c:
        commitment = c.get(f"/api/events/{event_id}").json()["queue"]["draw"]["commitment"]
    assert onsale.admin("POST", f"/api/ops/events/{event_id}/queue/pause").status_code == 200
    page, _ = shopper()
    event = EventPage(page, event_id).open()
    expect(event.queue_policy).to_contain_text("random draw at")
    queue = event.join_the_queue()
    expect(queue.room).to_have_attribute("data-state", "prequeue")
    expect(queue.status).to_contain_text("You are in the draw")
    expect(queue.commitment).to_have_text(commitment)
    expect(queue.revealed_seed).to_be_hidden()
    shot(page, "draw-committed")
    # The sale opens, the admitter draws (admission stays paused): the seed is revealed.
    expect(queue.room).to_have_attribute("data-state", "paused", timeout=ADMITTED_WITHIN)
    expect(queue.revealed_seed).to_be_visible()
    expect(queue.revealed_seed).to_contain_text(
        "matches the commitment; your drawn place is 1")
    shot(page, "draw-revealed")
    assert onsale.admin("POST", f"/api/ops/events/{event_id}/queue/resume").status_code == 200
    page.wait_for_url(f"**/events/{event_id}/seats", timeout=ADMITTED_WITHIN)


def test_shopping_on_another_device_is_explained_and_can_be_taken_back(
        onsale: Onsale, new_context: Callable[[], BrowserContext], shot: Shot) -> None:
    event_id = onsale.create_event(queue_policy="passthrough")
    _, _, cookie = onsale.new_account()
    devices = []
    for _ in range(2):  # one account, two browsers (devices): one session at a time
        context = new_context()
        context.add_cookies([{"name": onsale.cookie_name, "value": cookie,
                              "url": onsale.base_url}])
        devices.append(context.new_page())
    laptop, phone = devices
    laptop.goto(f"/events/{event_id}/queue")
    laptop.wait_for_url(f"**/events/{event_id}/seats")
    phone.goto(f"/events/{event_id}/queue")  # a join from a new device takes the session
    phone.wait_for_url(f"**/events/{event_id}/seats")
    queue = Queue(laptop, event_id).open()
    expect(queue.room).to_have_attribute("data-state", "elsewhere")
    expect(queue.status).to_contain_text("already shopping this sale in another browser")
    shot(laptop, "elsewhere")
    laptop.get_by_role("button", name="Shop here instead").click()
    laptop.wait_for_url(f"**/events/{event_id}/seats")
    # The gate caches a session for up to a second (docs/edge.md#the-gate).
    refused = wait_for(lambda: phone.request.get(f"/api/events/{event_id}/seatmap").status == 403,
                       within=5)
    assert refused
    r = phone.request.get(f"/api/events/{event_id}/seatmap")
    assert r.json()["code"] == "admission_revoked"
