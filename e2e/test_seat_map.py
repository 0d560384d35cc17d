"""The seat map page in a real browser against a real ``onsale dev``: all
50,000 seats drawn, two shoppers racing for one seat, a sale seen live in
another browser, the keyboard picker, best available together, and the
snapshot/delta codec with literal inputs."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, WebSocketRoute, expect

from e2e.harness import Onsale, wait_for
from e2e.pages import Checkout, SeatMap, alert_text

Shopper = Callable[[], tuple[Page, str]]
Shot = Callable[[Page, str], Any]
APPROVE = "4242 4242 4242 4242"


def admit(page: Page, event_id: int) -> None:
    """Join the event's (passthrough) queue from the page's context: the answer
    sets the admission cookie, as the waiting room page does."""
    r = page.request.post(f"/api/events/{event_id}/queue")
    assert r.status == 200, r.text()
    assert r.json().get("admission_token"), r.text()


def open_map(page: Page, event_id: int, *, join: bool = True) -> SeatMap:
    """Admitted shopper on the seat map, once it is drawn and live."""
    if join:
        admit(page, event_id)
    return SeatMap(page).open(event_id).wait_until_live()


def status(page: Page, seat_id: int) -> str:
    return str(page.evaluate("id => window.onsaleSeatmap.status(id)", seat_id))


def seat_label(page: Page, event_id: int, seat_id: int) -> str:
    """How the pages name a seat, from the venue layout."""
    seats = page.request.get(f"/api/events/{event_id}/venue").json()["seats"]
    i = seats["seat_id"].index(seat_id)
    return f"Section {seats['section'][i]}, row {seats['row'][i]}, seat {seats['number'][i]}"


def hold_seat(page: Page, seat_id: int) -> Checkout:
    """Select one seat through the page's API and press Hold; lands on checkout."""
    assert page.evaluate("id => window.onsaleSeatmap.select(id)", seat_id) is True
    return SeatMap(page).hold()


@pytest.fixture(scope="module")
def big_event(onsale: Onsale) -> int:
    """The demo event's queue is FIFO (onsale dev seeds it with the defaults), so
    the tests that need 50,000 seats use a passthrough event of the same size."""
    with onsale.http() as c:
        demo = c.get(f"/api/events/{onsale.demo_event_id}").json()
    if demo["queue"]["policy"] == "passthrough":
        return onsale.demo_event_id
    return onsale.create_event(seats=50_000)


def test_the_map_draws_all_50000_seats_with_a_legend(shopper: Shopper, big_event: int,
                                                     shot: Shot) -> None:
    page, _ = shopper()
    seat_map = open_map(page, big_event)
    assert page.evaluate("window.onsaleSeatmap.seatCount") == 50_000
    assert page.evaluate("window.onsaleSeatmap.drawn") == 50_000  # the whole venue in view
    # The canvas really has ink on it: many non-background pixels.
    inked = seat_map.canvas.evaluate("""c => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
        return n; }""")
    assert inked > 20_000
    legend = seat_map.legend.inner_text()
    assert "Premium" in legend and "Sold" in legend and "150.00 USD" in legend
    assert seat_map.live_status.inner_text() == "Live updates on"
    shot(page, "seat-map")
    seat_map.zoom_in()
    seat_map.zoom_in()
    page.wait_for_function("() => window.onsaleSeatmap.drawn < 50000")
    shot(page, "seat-map-zoomed")
    seat_map.whole_venue()
    page.wait_for_function("() => window.onsaleSeatmap.drawn === 50000")


def test_two_shoppers_race_for_one_seat(shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    event_id = onsale.create_event(seats=300)
    first, _ = shopper()
    second, _ = shopper()
    seat = 42
    maps = [open_map(page, event_id) for page in (first, second)]
    for seat_map in maps:
        seat_map.page.evaluate("() => { window.notReloaded = true; }")
        assert seat_map.page.evaluate("id => window.onsaleSeatmap.select(id)", seat) is True
        assert seat_map.seats.count() == 1
    # Both press Hold at (nearly) the same moment (a click in the page, without waiting on
    # the other); core decides who gets the seat.
    for seat_map in maps:
        seat_map.hold_button.evaluate("button => button.click()")

    def on_checkout(page: Page) -> bool:  # asks the page: Page.url may lag while we poll
        try:
            return str(page.evaluate("location.pathname")).startswith("/checkout/")
        except PlaywrightError:  # navigating right now
            return False

    def told(page: Page) -> bool:
        """The seat went to the other shopper, and this page says so: its hold was refused
        ("just taken"), or the live map took the seat away before its Hold went out
        ("just took")."""
        text = alert_text(page)
        return "taken" in text or "just took" in text

    def outcome() -> tuple[Page, Page] | None:
        for winner, loser in ((first, second), (second, first)):
            if on_checkout(winner) and told(loser):
                return winner, loser
        return None

    decided = wait_for(outcome, within=15)
    assert decided is not None, [(p.url, alert_text(p)) for p in (first, second)]
    winner, loser = decided
    text = alert_text(loser)
    assert seat_label(loser, event_id, seat) in text, text
    assert "{" not in text and "seats_unavailable" not in text
    assert not on_checkout(loser)
    # Held on the live map (not just the page's own mark after the refusal).
    loser.wait_for_function("id => window.onsaleSeatmap.liveStatus(id) === 'held'", arg=seat)
    assert loser.evaluate("window.notReloaded") is True  # the map changed without a reload
    assert loser.evaluate("window.onsaleSeatmap.selected()") == []
    shot(loser, "race-lost")
    shot(winner, "race-won")


def test_a_seat_sold_in_one_browser_changes_colour_in_another_within_a_second(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    event_id = onsale.create_event(seats=300)
    buyer, _ = shopper()
    watcher, _ = shopper()
    buying = open_map(buyer, event_id)
    open_map(watcher, event_id)
    watcher.evaluate("() => { window.notReloaded = true; }")
    seat = 7
    assert status(watcher, seat) == "available"
    colours = [watcher.evaluate("id => window.onsaleSeatmap.colour(id)", seat)]
    assert buyer.evaluate("id => window.onsaleSeatmap.select(id)", seat) is True
    with buyer.expect_response(lambda r: r.url.endswith("/holds")
                               and r.request.method == "POST") as held:
        buying.hold_button.click()
    assert held.value.status == 201
    # Taken by someone else: the other map turns it from its tier colour to "held".
    started = time.monotonic()
    watcher.wait_for_function("id => window.onsaleSeatmap.liveStatus(id) === 'held'",
                              arg=seat, polling=20, timeout=5_000)
    elapsed = time.monotonic() - started
    assert elapsed < 1.3, f"the hold showed up after {elapsed:.2f}s"
    colours.append(watcher.evaluate("id => window.onsaleSeatmap.colour(id)", seat))
    buyer.wait_for_url("**/checkout/*")
    checkout = Checkout(buyer)
    checkout.enter_card(APPROVE)
    with buyer.expect_response(lambda r: r.url.endswith("/checkout")
                               and r.request.method == "POST") as answered:
        checkout.press_pay()
    assert answered.value.status == 201, answered.value.text()
    # The seat was SOLD before the checkout answered; from that answer, the other
    # browser must show it sold within a second (plus a little polling slack).
    started = time.monotonic()
    watcher.wait_for_function("id => window.onsaleSeatmap.status(id) === 'sold'", arg=seat,
                              polling=20, timeout=5_000)
    elapsed = time.monotonic() - started
    assert elapsed < 1.3, f"the sale showed up after {elapsed:.2f}s"
    colours.append(watcher.evaluate("id => window.onsaleSeatmap.colour(id)", seat))
    assert len(set(colours)) == 3, colours  # available, held, sold: three colours
    assert watcher.evaluate("window.notReloaded") is True
    shot(watcher, "sold-elsewhere")


def test_the_keyboard_picker_selects_a_seat(shopper: Shopper, onsale: Onsale,
                                            shot: Shot) -> None:
    event_id = onsale.create_event(seats=300)
    page, _ = shopper()
    seat_map = open_map(page, event_id)
    seat_map.section.focus()
    page.keyboard.press("ArrowDown")        # the second section
    page.keyboard.press("Tab")              # -> row
    page.keyboard.press("ArrowDown")        # the second row
    page.keyboard.press("Tab")              # -> seat
    page.keyboard.press("ArrowDown")        # the second seat of the row
    chosen = int(seat_map.seat.input_value())
    section = seat_map.section.input_value()
    row = seat_map.row.input_value()
    assert section != seat_map.section.get_by_role("option").first.get_attribute("value")
    page.keyboard.press("Tab")              # -> Add seat
    expect(seat_map.add_button).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.onsaleSeatmap.selected().length === 1")
    assert page.evaluate("window.onsaleSeatmap.selected()") == [chosen]
    listed = seat_map.selection.inner_text()
    assert f"Section {section}, row {row}" in listed
    total = seat_map.total.inner_text()
    assert total.startswith("Total: ") and not total.startswith("Total: 0.00 USD"), total
    shot(page, "keyboard-picked")
    seat_map.hold_button.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/checkout/*")
    assert "Section " + section in " ".join(Checkout(page).held.all_inner_texts())


def test_best_available_together(shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    event_id = onsale.create_event(seats=300)
    page, _ = shopper()
    checkout = open_map(page, event_id).hold_best_available(3, together=True)
    hold_id = page.url.rsplit("/", 1)[1]
    hold = page.request.get(f"/api/holds/{hold_id}").json()
    seats = hold["seats"]
    assert len(seats) == 3
    assert len({(s["section"], s["row"]) for s in seats}) == 1
    numbers = sorted(s["number"] for s in seats)
    assert numbers == list(range(numbers[0], numbers[0] + 3))
    assert checkout.held.count() == 3
    shot(page, "checkout-best-available")


def test_the_map_without_admission_points_to_the_waiting_room(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    event_id = onsale.create_event(seats=300)
    page, _ = shopper()
    gate = SeatMap(page).open(event_id).gate
    gate.wait_for(state="visible")
    assert "join the queue" in gate.inner_text()
    expect(gate.get_by_role("link", name="Go to the waiting room")).to_have_attribute(
        "href", f"/events/{event_id}/queue")
    assert "{" not in gate.inner_text()
    shot(page, "seat-map-not-admitted")


CODEC_CASES = """async () => {
  const c = await import('/static/js/seatmap_codec.js');
  const s = c.fromSnapshot({type: 'snapshot', event_id: 7, version: '0/1', seat_count: 6,
                            status: '011034', held: [2, 100, 1, 5]});
  const before = [1, 2, 3, 4, 5, 6].map(id => c.statusOf(s, id, 99));
  const lapsed = [c.statusOf(s, 2, 100), c.statusOf(s, 3, 104), c.statusOf(s, 3, 105)];
  const stale = c.applyDelta(s, {type: 'delta', from: '0/9', to: '0/A', changes: [[1, 3]]});
  const fresh = c.applyDelta(s, {type: 'delta', from: '0/1', to: '0/2',
                                 changes: [[1, 1, 200], [2, 0], [99, 3]]});
  return {before, lapsed, stale, fresh, version: s.version, one: c.statusOf(s, 1, 150),
          two: c.statusOf(s, 2, 0), unknown: c.statusOf(s, 99, 0), next: c.nextExpiry(s, 104)};
}"""


def test_the_codec_decodes_snapshots_and_applies_deltas_in_order(
        new_context: Callable[[], Any]) -> None:
    page = new_context().new_page()
    page.goto("/static/onsale.css")  # any same-origin page can import the module
    got = page.evaluate(CODEC_CASES)
    assert got["before"] == ["available", "held", "held", "available", "sold", "blocked"]
    assert got["lapsed"] == ["available", "held", "available"]  # shown free from its expiry
    assert got["stale"] == {"applied": False, "changed": []}
    assert got["fresh"] == {"applied": True, "changed": [1, 2]}  # seat 99 does not exist
    assert (got["version"], got["one"], got["two"], got["unknown"]) == \
        ("0/2", "held", "available", "blocked")
    assert got["next"] == 105, json.dumps(got)


def test_without_the_socket_the_map_polls_and_says_live_updates_are_paused(
        shopper: Shopper, onsale: Onsale, shot: Shot) -> None:
    event_id = onsale.create_event(seats=300)
    page, _ = shopper()
    other, _ = shopper()
    admit(page, event_id)

    def unavailable(ws: WebSocketRoute) -> None:  # what a seatmap server without CDC says
        ws.send(json.dumps({"type": "unavailable"}))
        ws.close(code=1013, reason="unavailable")

    page.route_web_socket(re.compile(r".*/ws/events/\d+/seatmap.*"), unavailable)
    snapshots: list[float] = []
    page.on("response", lambda r: snapshots.append(time.monotonic())
            if r.url.endswith(f"/api/events/{event_id}/seatmap") else None)
    seat_map = SeatMap(page).open(event_id)
    page.wait_for_function("() => window.onsaleSeatmap.live === 'paused'")
    assert seat_map.live_status.inner_text().startswith("Live updates paused")
    # Someone else holds a seat: the polled snapshot (max-age 1 s) shows it.
    open_map(other, event_id)
    hold_seat(other, 5)
    page.wait_for_function("() => window.onsaleSeatmap.status(5) === 'held'", timeout=10_000)
    assert len(snapshots) >= 2
    shot(page, "live-updates-paused")
