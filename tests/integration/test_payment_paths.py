"""The payment paths no other test took (issue 22, part 5), on onsale_checkout_begin and
onsale_payment_apply directly, for seats and GA places alike: a decline before and
after the hold's deadline, a provider that never authorized, a void that fails, answers
delivered twice, an UNKNOWN after the capture, a capture that definitively failed, and
the checkout's own boundaries (the ticket limit, the time left to pay). Each one kills a
plausible one-line slip that every other test let through (scripts/mutants.py); each
ends with the audit."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest

from tests.conftest import Api, asyncpg_connect, audit_clean
from tests.integration.test_ga_holds import floor, ga_event


@dataclass
class Paying:
    event_id: int
    account: uuid.UUID
    hold_id: uuid.UUID
    order_id: uuid.UUID
    operation_id: uuid.UUID
    ga: bool


async def _begin(conn: Any, hold_id: uuid.UUID, account: uuid.UUID,
                 min_remaining: int = 0) -> Any:
    return await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, $3, 'd', 'card_4242', 600, $4, 30)",
        hold_id, account, uuid.uuid4().hex, min_remaining)


async def paying(api: Api, conn: Any, *, ga: bool = False) -> Paying:
    """A hold of seats 1 and 2 (or of 2 GA places of a one-stripe tier of 10) in
    payment: its checkout begun, the authorization not answered yet. Made first, and
    left alone: a decoy event at another price with the same seat ids (the same tier
    id) and a live hold on them, so a step that looks beyond its own event or hold
    finds other rows, priced otherwise, first."""
    decoy = await api.account(conn)
    if ga:
        decoy_event = await ga_event(api, {**floor(capacity=5, stripes=1), "price_minor": 7000},
                                     seats=0)
        await conn.fetchrow(
            "SELECT * FROM onsale_ga_hold($1, $2, 'k', 'd', 1::smallint, 1, false)",
            decoy_event, decoy)
    else:
        decoy_event = await api.create_event(
            seats=10, price_tiers=[{"name": "Only", "price_minor": 1234}])
        await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k', 'd', $3)",
                            decoy_event, decoy, [1, 2])
    account = await api.account(conn)
    if ga:  # tier 2 of its event; tier 1, another price, comes first
        event_id = await ga_event(api, {"name": "Balcony", "price_minor": 3000, "capacity": 5},
                                  floor(capacity=10, stripes=1), seats=0)
        row = await conn.fetchrow(
            "SELECT * FROM onsale_ga_hold($1, $2, 'k', 'd', 2::smallint, 2, false)",
            event_id, account)
    else:
        event_id = await api.create_event(seats=10)
        row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k', 'd', $3)",
                                  event_id, account, [1, 2])
    assert row["status_code"] == 201, dict(row)
    hold_id = uuid.UUID(row["body"]["hold_id"])
    begun = await _begin(conn, hold_id, account)
    return Paying(event_id, account, hold_id, begun["order_id"], begun["operation_id"], ga)


async def apply(conn: Any, operation_id: uuid.UUID, outcome: str, ref: str | None = "pi_1",
                failure: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = await conn.fetchval(
        "SELECT onsale_payment_apply($1, $2, $3, $4, NULL, 'test', 5)",
        operation_id, outcome, ref, failure)
    return result


async def past_deadline(conn: Any, p: Paying) -> None:
    """The hold's own deadline passed while its payment ran (its grace has not)."""
    await conn.execute("UPDATE holds SET expires_at = now() - interval '1 second' "
                       "WHERE hold_id = $1", p.hold_id)


async def state(conn: Any, p: Paying) -> tuple[str, str, str, list[str]]:
    """(hold status, order status, payment status, the seats' or places' statuses)."""
    hold = await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1", p.hold_id)
    order = await conn.fetchrow("SELECT status, payment_status FROM orders WHERE order_id = $1",
                                p.order_id)
    if p.ga:  # one row per stripe, with its quantity: one status per place
        rows = await conn.fetch("SELECT status FROM ga_hold_places, generate_series(1, quantity) "
                                "WHERE hold_id = $1", p.hold_id)
    else:
        rows = await conn.fetch("SELECT status FROM seat_inventory WHERE event_id = $1 "
                                "AND seat_id IN (1, 2) ORDER BY seat_id", p.event_id)
    return hold, order["status"], order["payment_status"], [r["status"] for r in rows]


async def releases(conn: Any, p: Paying) -> list[str]:
    """The reason of each seat's (or place's) release."""
    if p.ga:
        rows = await conn.fetch("SELECT reason FROM ga_releases, generate_series(1, quantity) "
                                "WHERE hold_id = $1", p.hold_id)
    else:
        rows = await conn.fetch("SELECT reason FROM hold_releases WHERE hold_id = $1", p.hold_id)
    return sorted(r["reason"] for r in rows)


async def available(conn: Any, p: Paying) -> int:
    if p.ga:
        n: int = await conn.fetchval("SELECT sum(available) FROM ga_buckets "
                                     "WHERE event_id = $1 AND tier_id = 2", p.event_id)
        return n
    n = await conn.fetchval("SELECT count(*) FROM seat_inventory WHERE event_id = $1 "
                            "AND status = 'AVAILABLE'", p.event_id)
    return n


@pytest.mark.parametrize("ga", [False, True], ids=["seats", "ga"])
async def test_a_decline_before_the_deadline_returns_the_hold_for_another_card(
        api: Api, conn: Any, ga: bool) -> None:
    p = await paying(api, conn, ga=ga)
    declined = await apply(conn, p.operation_id, "DECLINED", failure="card_declined")
    assert (declined["applied"], declined["follow_up"]) == (True, None)
    assert await state(conn, p) == ("HELD", "PENDING", "DECLINED", ["HELD", "HELD"])
    if not ga:  # back under the hold's own deadline, not the grace
        assert await conn.fetchval(
            "SELECT count(*) FROM seat_inventory si JOIN holds h ON h.hold_id = si.hold_id "
            "WHERE h.hold_id = $1 AND si.hold_expires_at = h.expires_at", p.hold_id) == 2
    assert await releases(conn, p) == []
    await audit_clean(conn)
    again = await _begin(conn, p.hold_id, p.account)  # another card, the same order
    assert again["order_id"] == p.order_id
    # the reused order's payment is in flight again, not left as the decline
    places = ["HELD"] * 2 if ga else ["PAYMENT_PENDING"] * 2
    assert await state(conn, p) == ("PAYMENT_PENDING", "PENDING", "PENDING", places)
    sold = await apply(conn, again["operation_id"], "AUTHORIZED", "pi_2")
    assert sold["order_status"] == "CONFIRMED"
    assert await state(conn, p) == ("CONFIRMED", "CONFIRMED", "AUTHORIZED", ["SOLD", "SOLD"])
    await audit_clean(conn)


@pytest.mark.parametrize("ga", [False, True], ids=["seats", "ga"])
async def test_a_decline_after_the_deadline_releases_the_hold(
        api: Api, conn: Any, ga: bool) -> None:
    """No time left for another card: the seats (places) go back, logged as a failed
    payment, and the order fails as declined."""
    p = await paying(api, conn, ga=ga)
    await past_deadline(conn, p)
    declined = await apply(conn, p.operation_id, "DECLINED", failure="card_declined")
    assert declined["applied"] is True
    free = ["RETURNED", "RETURNED"] if ga else ["AVAILABLE", "AVAILABLE"]
    assert await state(conn, p) == ("EXPIRED", "FAILED", "DECLINED", free)
    assert await available(conn, p) == 10
    assert await releases(conn, p) == ["payment_failed", "payment_failed"]
    assert await conn.fetchval("SELECT cancel_reason FROM orders WHERE order_id = $1",
                               p.order_id) == "payment_declined"
    await audit_clean(conn)


@pytest.mark.parametrize("ga", [False, True], ids=["seats", "ga"])
async def test_no_authorization_releases_even_before_the_deadline(
        api: Api, conn: Any, ga: bool) -> None:
    """The provider has no authorization (the intent was cancelled, or never made):
    unlike a decline, the shopper is not offered another card."""
    p = await paying(api, conn, ga=ga)
    result = await apply(conn, p.operation_id, "NO_AUTHORIZATION", failure="canceled")
    assert result["applied"] is True
    free = ["RETURNED", "RETURNED"] if ga else ["AVAILABLE", "AVAILABLE"]
    assert await state(conn, p) == ("EXPIRED", "FAILED", "FAILED", free)
    assert await conn.fetchval("SELECT cancel_reason FROM orders WHERE order_id = $1",
                               p.order_id) == "payment_not_completed"
    assert await available(conn, p) == 10
    await audit_clean(conn)


async def test_a_void_that_fails_releases_nothing_and_keeps_the_authorization_open(
        api: Api, conn: Any) -> None:
    """The reconciler gave up on a 3-D Secure payment and sent a void, which failed:
    the authorization may still complete, so the seats stay in payment and the order
    stays open; only a void the provider confirms ends them."""
    p = await paying(api, conn)
    await apply(conn, p.operation_id, "REQUIRES_ACTION")
    void_id = await conn.fetchval("SELECT onsale_payment_abandon($1, 'pi_1')", p.operation_id)
    failed = await apply(conn, void_id, "VOID_FAILED", failure="void_failed")
    assert failed["applied"] is True
    ops = {r["kind"]: (r["status"], r["failure_code"]) for r in await conn.fetch(
        "SELECT kind, status, failure_code FROM payment_operations WHERE order_id = $1",
        p.order_id)}
    assert ops == {"AUTHORIZE": ("REQUIRES_ACTION", None), "VOID": ("FAILED", "void_failed")}
    assert await state(conn, p) == ("PAYMENT_PENDING", "PENDING", "REQUIRES_ACTION",
                                    ["PAYMENT_PENDING", "PAYMENT_PENDING"])
    assert await releases(conn, p) == []
    await audit_clean(conn)
    # Delivered again: a definitive operation never changes.
    again = await apply(conn, void_id, "VOIDED")
    assert again["applied"] is False
    assert await state(conn, p) == ("PAYMENT_PENDING", "PENDING", "REQUIRES_ACTION",
                                    ["PAYMENT_PENDING", "PAYMENT_PENDING"])
    await audit_clean(conn)


async def test_a_confirmed_void_ends_the_open_authorization_and_frees_the_seats(
        api: Api, conn: Any) -> None:
    p = await paying(api, conn)
    await apply(conn, p.operation_id, "REQUIRES_ACTION")
    void_id = await conn.fetchval("SELECT onsale_payment_abandon($1, 'pi_1')", p.operation_id)
    assert await conn.fetchval("SELECT onsale_payment_abandon($1, 'pi_1')",
                               p.operation_id) == void_id  # the same void, not a second
    voided = await apply(conn, void_id, "VOIDED")
    assert voided["applied"] is True
    assert await state(conn, p) == ("EXPIRED", "FAILED", "VOIDED", ["AVAILABLE", "AVAILABLE"])
    assert await conn.fetchval("SELECT status FROM payment_operations WHERE operation_id = $1",
                               p.operation_id) == "FAILED"
    assert await releases(conn, p) == ["payment_failed", "payment_failed"]
    # The authorization is no longer open: nothing left to abandon.
    assert await conn.fetchval("SELECT onsale_payment_abandon($1, 'pi_1')",
                               p.operation_id) is None
    await audit_clean(conn)


@pytest.mark.parametrize("outcome", ["DECLINED", "AUTHORIZED", "REQUIRES_ACTION"])
async def test_an_answer_delivered_twice_is_applied_once(
        api: Api, conn: Any, outcome: str) -> None:
    p = await paying(api, conn)
    first = await apply(conn, p.operation_id, outcome)
    before = await state(conn, p)
    second = await apply(conn, p.operation_id, outcome)
    assert (first["applied"], second["applied"]) == (True, False)
    assert await state(conn, p) == before
    events = await conn.fetchval("SELECT count(*) FROM payment_events WHERE operation_id = $1 "
                                 "AND action = $2", p.operation_id, f"authorize:{outcome.lower()}")
    assert events == 1
    await audit_clean(conn)


@pytest.mark.parametrize("ga", [False, True], ids=["seats", "ga"])
async def test_a_captured_payment_stays_captured_after_a_late_unknown(
        api: Api, conn: Any, ga: bool) -> None:
    p = await paying(api, conn, ga=ga)
    sold = await apply(conn, p.operation_id, "AUTHORIZED")
    capture = uuid.UUID(sold["follow_up"]["operation_id"])
    assert (await apply(conn, capture, "CAPTURED"))["payment_status"] == "CAPTURED"
    late = await apply(conn, capture, "UNKNOWN", None)
    assert (late["applied"], late["payment_status"]) == (False, "CAPTURED")
    late = await apply(conn, p.operation_id, "UNKNOWN", None)
    assert (late["applied"], late["payment_status"]) == (False, "CAPTURED")
    assert await state(conn, p) == ("CONFIRMED", "CONFIRMED", "CAPTURED", ["SOLD", "SOLD"])
    await audit_clean(conn)


async def test_an_unknown_before_the_capture_is_recorded_and_retried(
        api: Api, conn: Any) -> None:
    p = await paying(api, conn)
    sold = await apply(conn, p.operation_id, "AUTHORIZED")
    capture = uuid.UUID(sold["follow_up"]["operation_id"])
    unknown = await apply(conn, capture, "UNKNOWN", None)
    assert (unknown["applied"], unknown["order_status"], unknown["payment_status"]) == \
        (True, "CONFIRMED", "UNKNOWN")
    row = await conn.fetchrow("SELECT status, attempts FROM payment_operations "
                              "WHERE operation_id = $1", capture)
    assert (row["status"], row["attempts"]) == ("UNKNOWN", 1)
    assert (await apply(conn, capture, "CAPTURED"))["payment_status"] == "CAPTURED"
    await audit_clean(conn)


@pytest.mark.parametrize("ga", [False, True], ids=["seats", "ga"])
async def test_a_capture_that_definitively_failed_is_compensated(
        api: Api, conn: Any, ga: bool) -> None:
    p = await paying(api, conn, ga=ga)
    sold = await apply(conn, p.operation_id, "AUTHORIZED")
    capture = uuid.UUID(sold["follow_up"]["operation_id"])
    failed = await apply(conn, capture, "CAPTURE_FAILED", None, "expired_for_capture")
    assert (failed["order_status"], failed["payment_status"]) == ("CANCELLED", "CAPTURE_FAILED")
    free = ["RETURNED", "RETURNED"] if ga else ["AVAILABLE", "AVAILABLE"]
    assert await state(conn, p) == ("RELEASED", "CANCELLED", "CAPTURE_FAILED", free)
    assert await available(conn, p) == 10
    assert await releases(conn, p) == ["compensated", "compensated"]
    table = "ga_order_items" if ga else "order_items"
    assert await conn.fetchval(f"SELECT bool_or(valid) FROM {table} WHERE order_id = $1",
                               p.order_id) is False
    # The capture's answer delivered again compensates nothing twice.
    assert (await apply(conn, capture, "CAPTURE_FAILED"))["applied"] is False
    assert await available(conn, p) == 10
    await audit_clean(conn)


async def test_checkout_of_a_hold_that_fills_the_limit_exactly(api: Api, conn: Any) -> None:
    """The checkout counts the account's tickets again (its own hold included): exactly
    the limit may be paid for."""
    event_id = await api.create_event(seats=10, max_tickets_per_account=3)
    account = await api.account(conn)
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k', 'd', $3)",
                              event_id, account, [1, 2, 3])
    begun = await _begin(conn, uuid.UUID(row["body"]["hold_id"]), account)
    assert begun["order_id"] is not None
    await audit_clean(conn)


@pytest.mark.parametrize(("left", "allowed"), [("30 seconds", True),
                                               ("30 seconds - 1 microsecond", False)])
async def test_checkout_needs_the_minimum_time_left_exactly(
        api: Api, conn: Any, left: str, allowed: bool) -> None:
    """now() is fixed inside a transaction: a hold with exactly the minimum time left
    may start paying; a microsecond less is refused as expiring."""
    event_id = await api.create_event(seats=10)
    account = await api.account(conn)
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k', 'd', $3)",
                              event_id, account, [1])
    hold_id = uuid.UUID(row["body"]["hold_id"])
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() + $2::text::interval "
                           "WHERE hold_id = $1", hold_id, left)
        await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() + "
                           "$2::text::interval WHERE hold_id = $1", hold_id, left)
        if allowed:
            assert (await _begin(conn, hold_id, account, 30))["order_id"] is not None
        else:
            with pytest.raises(asyncpg.PostgresError) as caught:
                await _begin(conn, hold_id, account, 30)
            exc: Any = caught.value
            assert (exc.sqlstate, exc.args[0]) == ("OS409", "hold_expiring")
            assert json.loads(exc.detail)["min_remaining_seconds"] == 30
    await audit_clean(conn)


async def test_only_an_open_authorization_is_abandoned_and_each_gets_its_own_void(
        api: Api, conn: Any) -> None:
    """The reconciler abandons an authorization still open past its grace (3-D Secure
    never finished, or its outcome unknown): a VOID of its own, the same one when asked
    again; a finished authorization, or a capture, is not abandoned."""
    abandon = "SELECT onsale_payment_abandon($1, 'pi_1')"
    first = await paying(api, conn)
    await apply(conn, first.operation_id, "REQUIRES_ACTION")
    first_void = await conn.fetchval(abandon, first.operation_id)
    unknown = await paying(api, conn)
    await apply(conn, unknown.operation_id, "UNKNOWN", None)
    void = await conn.fetchval(abandon, unknown.operation_id)
    assert void is not None and void != first_void
    assert await conn.fetchval(abandon, unknown.operation_id) == void  # its own, again
    sold = await paying(api, conn)
    capture = uuid.UUID((await apply(conn, sold.operation_id, "AUTHORIZED"))
                        ["follow_up"]["operation_id"])
    assert await conn.fetchval(abandon, sold.operation_id) is None
    assert await conn.fetchval(abandon, capture) is None
    assert await conn.fetchval("SELECT count(*) FROM payment_operations WHERE kind = 'VOID'") == 2
    await audit_clean(conn)


async def test_an_unknown_is_recorded_each_time_and_never_named_a_mismatch_by_its_id(
        api: Api, conn: Any) -> None:
    """UNKNOWN answers are recorded and retried, each one; an UNKNOWN naming another
    intent than the one the operation recorded (the capture's, here) is still a plain
    UNKNOWN (the id check is for definitive answers), and one core found contradicting
    keeps its own failure code."""
    p = await paying(api, conn)
    sold = await apply(conn, p.operation_id, "AUTHORIZED", "pi_1")
    capture = uuid.UUID(sold["follow_up"]["operation_id"])
    for attempt in (1, 2):
        unknown = await apply(conn, capture, "UNKNOWN", "pi_2")
        assert (unknown["applied"], unknown["mismatch"]) == (True, False)
        row = await conn.fetchrow("SELECT status, attempts FROM payment_operations "
                                  "WHERE operation_id = $1", capture)
        assert (row["status"], row["attempts"]) == ("UNKNOWN", attempt)
    found = await apply(conn, capture, "UNKNOWN", "pi_2", "mismatch_amount")
    assert found["mismatch"] is True
    assert await conn.fetchval(
        "SELECT detail ->> 'failure_code' FROM payment_events WHERE operation_id = $1 "
        "AND action = 'capture:mismatch'", capture) == "mismatch_amount"
    assert await state(conn, p) == ("CONFIRMED", "CONFIRMED", "UNKNOWN", ["SOLD", "SOLD"])
    await audit_clean(conn)


async def test_an_unknown_about_the_void_of_a_failed_order_leaves_its_payment_status(
        api: Api, conn: Any) -> None:
    p = await paying(api, conn)
    await conn.execute("UPDATE orders SET amount_minor = amount_minor + 1 "
                       "WHERE order_id = $1", p.order_id)  # as a price change would
    lost = await apply(conn, p.operation_id, "AUTHORIZED")
    assert (lost["order_status"], lost["follow_up"]["kind"]) == ("FAILED", "VOID")
    before = await state(conn, p)
    unknown = await apply(conn, uuid.UUID(lost["follow_up"]["operation_id"]), "UNKNOWN", None)
    assert unknown["applied"] is True
    assert await state(conn, p) == before
    await audit_clean(conn)


async def test_a_stray_authorization_of_a_captured_order_is_voided_and_changes_nothing(
        api: Api, conn: Any) -> None:
    """A declined card, then another one paid and captured; then the declined intent
    reports an authorization after all: it is voided, and the order stays captured
    whatever the void's answers."""
    p = await paying(api, conn)
    await apply(conn, p.operation_id, "DECLINED", "pi_1", "card_declined")
    again = await _begin(conn, p.hold_id, p.account)
    sold = await apply(conn, again["operation_id"], "AUTHORIZED", "pi_2")
    await apply(conn, uuid.UUID(sold["follow_up"]["operation_id"]), "CAPTURED", "pi_2")
    stray = await apply(conn, p.operation_id, "AUTHORIZED", "pi_1")
    assert stray["follow_up"]["kind"] == "VOID"
    void_id = uuid.UUID(stray["follow_up"]["operation_id"])
    captured = ("CONFIRMED", "CONFIRMED", "CAPTURED", ["SOLD", "SOLD"])
    assert (await apply(conn, void_id, "UNKNOWN", None))["payment_status"] == "CAPTURED"
    assert await state(conn, p) == captured
    assert (await apply(conn, void_id, "VOIDED", "pi_1"))["payment_status"] == "CAPTURED"
    assert await state(conn, p) == captured
    await audit_clean(conn)


@pytest.mark.parametrize("ga", [False, True], ids=["seats", "ga"])
async def test_answers_about_a_replaced_authorization_leave_the_live_ones_payment_status(
        api: Api, conn: Any, ga: bool) -> None:
    """A declined card, then another checkout whose authorization is still open; then
    the declined intent reports an authorization after all, and its void answers
    UNKNOWN and VOIDED. The order's payment status is the open authorization's
    throughout (never "cancelled, not charged" while a card may still be charged),
    and that authorization's own answers still apply: an UNKNOWN, then the sale."""
    p = await paying(api, conn, ga=ga)
    await apply(conn, p.operation_id, "DECLINED", "pi_1", "card_declined")
    again = await _begin(conn, p.hold_id, p.account)
    in_payment = ("PAYMENT_PENDING", "PENDING", "PENDING", ["PAYMENT_PENDING"] * 2)
    if ga:
        in_payment = (*in_payment[:3], ["HELD"] * 2)
    assert await state(conn, p) == in_payment
    stray = await apply(conn, p.operation_id, "AUTHORIZED", "pi_1")
    void_id = uuid.UUID(stray["follow_up"]["operation_id"])
    assert (await apply(conn, void_id, "UNKNOWN", None))["payment_status"] == "PENDING"
    assert (await apply(conn, void_id, "VOIDED", "pi_1"))["payment_status"] == "PENDING"
    assert await state(conn, p) == in_payment
    unknown = await apply(conn, again["operation_id"], "UNKNOWN", None)
    assert (unknown["applied"], unknown["payment_status"]) == (True, "UNKNOWN")
    sold = await apply(conn, again["operation_id"], "AUTHORIZED", "pi_2")
    assert (sold["order_status"], sold["follow_up"]["kind"]) == ("CONFIRMED", "CAPTURE")
    await audit_clean(conn)


async def test_a_late_authorization_reopens_only_its_own_void_that_found_nothing(
        api: Api, conn: Any) -> None:
    """A void that found no intent (it did not exist yet) is sent again when the
    authorization turns up; another order's such void, and a void the provider did
    confirm, stay as they are; another operation's missing reference stays missing."""
    first, second = await paying(api, conn), await paying(api, conn)
    voids = []
    for p in (first, second):
        void_id = await conn.fetchval("SELECT onsale_payment_abandon($1, NULL)", p.operation_id)
        await apply(conn, void_id, "VOIDED", None, "not_found")
        voids.append(void_id)
    waiting = await paying(api, conn)  # its authorization unanswered: no reference yet
    # An authorization naming no intent cannot tell the void where to go: nothing reopens.
    assert (await apply(conn, first.operation_id, "AUTHORIZED", None))["follow_up"] is None
    late = await apply(conn, second.operation_id, "AUTHORIZED", "pi_late")
    assert late["follow_up"]["operation_id"] == str(voids[1])
    statuses = {r["operation_id"]: (r["status"], r["provider_ref"]) for r in await conn.fetch(
        "SELECT operation_id, status, provider_ref FROM payment_operations "
        "WHERE operation_id = ANY ($1)", [*voids, waiting.operation_id])}
    assert statuses == {voids[0]: ("SUCCEEDED", None), voids[1]: ("PENDING", "pi_late"),
                        waiting.operation_id: ("PENDING", None)}
    await apply(conn, voids[1], "VOIDED", "pi_late")
    # Confirmed by the provider this time: a duplicate late authorization reopens nothing.
    again = await apply(conn, second.operation_id, "AUTHORIZED", "pi_late")
    assert again["follow_up"] is None
    assert await conn.fetchval("SELECT status FROM payment_operations WHERE operation_id = $1",
                               voids[1]) == "SUCCEEDED"
    await audit_clean(conn)


async def test_three_d_secure_marks_only_its_own_order(api: Api, conn: Any) -> None:
    p, other = await paying(api, conn), await paying(api, conn)
    action = await apply(conn, p.operation_id, "REQUIRES_ACTION")
    assert (action["applied"], action["payment_status"]) == (True, "REQUIRES_ACTION")
    assert (await state(conn, other))[2] == "PENDING"
    assert (await apply(conn, p.operation_id, "REQUIRES_ACTION"))["applied"] is False
    await audit_clean(conn)


async def test_a_new_price_version_does_not_change_a_payment_in_flight(
        api: Api, conn: Any) -> None:
    """Prices are versioned and a seat is sold at the version it carries: a new price
    for later sales, added while the payment runs, leaves its total as it was."""
    p = await paying(api, conn)
    await conn.execute(
        "INSERT INTO price_tiers (event_id, tier_id, price_version, name, price_minor) "
        "SELECT event_id, tier_id, price_version + 1, name, price_minor * 2 "
        "FROM price_tiers WHERE event_id = $1", p.event_id)
    sold = await apply(conn, p.operation_id, "AUTHORIZED")
    assert (sold["order_status"], sold["follow_up"]["kind"]) == ("CONFIRMED", "CAPTURE")
    await audit_clean(conn)


@pytest.mark.parametrize("change", ["seat_repriced", "operation_amount"])
async def test_an_authorization_that_no_longer_matches_fails_only_its_own_order(
        api: Api, conn: Any, change: str) -> None:
    """The sale needs the seats at the price they carry now to make the order's amount,
    and the authorization to be for that amount: a seat repriced while the payment ran
    (its new price version), or an operation for another amount (a contradicting answer
    that slipped past core's checks), fails the order as hold_lost, frees its seats and
    voids the authorization; another order in payment is not touched."""
    other = await paying(api, conn)
    p = await paying(api, conn)
    if change == "seat_repriced":
        await conn.execute(
            "INSERT INTO price_tiers (event_id, tier_id, price_version, name, price_minor) "
            "SELECT event_id, tier_id, price_version + 1, name, price_minor + 100 "
            "FROM price_tiers WHERE event_id = $1", p.event_id)
        await conn.execute("UPDATE seat_inventory SET price_version = price_version + 1 "
                           "WHERE event_id = $1 AND seat_id IN (1, 2)", p.event_id)
    else:
        await conn.execute("UPDATE payment_operations SET amount_minor = amount_minor + 1 "
                           "WHERE operation_id = $1", p.operation_id)
    lost = await apply(conn, p.operation_id, "AUTHORIZED")
    assert (lost["order_status"], lost["follow_up"]["kind"]) == ("FAILED", "VOID")
    assert await conn.fetchval("SELECT cancel_reason FROM orders WHERE order_id = $1",
                               p.order_id) == "hold_lost"
    assert (await state(conn, p))[3] == ["AVAILABLE", "AVAILABLE"]
    assert await state(conn, other) == ("PAYMENT_PENDING", "PENDING", "PENDING",
                                        ["PAYMENT_PENDING", "PAYMENT_PENDING"])
    await audit_clean(conn)


@contextlib.asynccontextmanager
async def locked_elsewhere(db_url: str, conn: Any, *statements: tuple[str, tuple[Any, ...]]
                           ) -> AsyncIterator[None]:
    """These locks held by another transaction (one in flight: a hold, a release, a
    sweep) while the body runs on ``conn``, with a lock timeout: a lock the body should
    not need makes it fail, not hang. It never waits unless it needs one of them."""
    async with asyncpg_connect(db_url) as other:
        locking = other.transaction()
        await locking.start()
        for sql, args in statements:
            await other.execute(sql, *args)
        await conn.execute("SET lock_timeout = '2s'")
        try:
            yield
        finally:
            await conn.execute("RESET lock_timeout")
            await locking.rollback()


def hold_transaction(p: Paying) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The locks a transaction on this hold takes: the account's, the hold, its seats."""
    return (("SELECT pg_advisory_xact_lock(hashtextextended($1::uuid::text, $2::bigint))",
             (p.account, p.event_id)),
            ("SELECT 1 FROM holds WHERE hold_id = $1 FOR UPDATE", (p.hold_id,)),
            ("SELECT 1 FROM seat_inventory WHERE event_id = $1 AND seat_id IN (1, 2) "
             "ORDER BY seat_id FOR UPDATE", (p.event_id,)))


async def test_unknown_and_captured_answers_take_only_the_tail_of_the_lock_ladder(
        api: Api, conn: Any, db_url: str) -> None:
    """UNKNOWN and CAPTURED answers move no seat, so they lock only the order and the
    operation: a transaction holding the account's lock, the hold and its seats does
    not hold them up (a timeout at checkout, a capture's answer)."""
    p = await paying(api, conn)
    async with locked_elsewhere(db_url, conn, *hold_transaction(p)):
        unknown = await apply(conn, p.operation_id, "UNKNOWN", None)
    assert (unknown["applied"], unknown["payment_status"]) == (True, "UNKNOWN")
    sold = await apply(conn, p.operation_id, "AUTHORIZED")
    capture = uuid.UUID(sold["follow_up"]["operation_id"])
    async with locked_elsewhere(db_url, conn, *hold_transaction(p)):
        late = await apply(conn, capture, "UNKNOWN", None)
        captured = await apply(conn, capture, "CAPTURED")
    assert (late["applied"], late["payment_status"]) == (True, "UNKNOWN")
    assert (captured["applied"], captured["payment_status"]) == (True, "CAPTURED")
    assert await state(conn, p) == ("CONFIRMED", "CONFIRMED", "CAPTURED", ["SOLD", "SOLD"])
    await audit_clean(conn)


async def test_a_sale_locks_only_its_own_seats(api: Api, conn: Any, db_url: str) -> None:
    """The authorization's sale locks its hold's seats and no other: the event's other
    seats and the same seat numbers at another event (the decoy's hold), locked by a
    transaction in flight, do not hold it up."""
    p = await paying(api, conn)
    others = ("SELECT 1 FROM seat_inventory WHERE NOT (event_id = $1 AND seat_id IN (1, 2)) "
              "ORDER BY event_id, seat_id FOR UPDATE", (p.event_id,))
    async with locked_elsewhere(db_url, conn, others):
        sold = await apply(conn, p.operation_id, "AUTHORIZED")
    assert (sold["order_status"], sold["follow_up"]["kind"]) == ("CONFIRMED", "CAPTURE")
    assert await state(conn, p) == ("CONFIRMED", "CONFIRMED", "AUTHORIZED", ["SOLD", "SOLD"])
    await audit_clean(conn)


async def test_a_ga_sale_is_priced_at_its_own_events_tier(api: Api, conn: Any) -> None:
    """Tier ids are per event: the places are priced at the tier of the hold's own
    event, never at a tier with the same id elsewhere (an earlier event's tier 2, at
    another price)."""
    await ga_event(api, {"name": "Stalls", "price_minor": 1000, "capacity": 5},
                   floor(capacity=10, stripes=1, price_minor=9000), seats=0)
    p = await paying(api, conn, ga=True)
    sold = await apply(conn, p.operation_id, "AUTHORIZED")
    assert (sold["order_status"], sold["follow_up"]["kind"]) == ("CONFIRMED", "CAPTURE")
    line = await conn.fetchrow("SELECT quantity, price_minor FROM ga_order_items "
                               "WHERE order_id = $1", p.order_id)
    assert (line["quantity"], line["price_minor"]) == (2, 5000)
    assert await state(conn, p) == ("CONFIRMED", "CONFIRMED", "AUTHORIZED", ["SOLD", "SOLD"])
    await audit_clean(conn)


@pytest.mark.parametrize(("left", "another_card"), [("0", False), ("1 microsecond", True)])
async def test_a_decline_at_the_deadline_exactly_releases_the_hold(
        api: Api, conn: Any, left: str, another_card: bool) -> None:
    """now() is fixed inside a transaction: a hold whose deadline is now() has expired
    (as the claim, the sweep and the checkout judge it), so a decline at that instant
    releases it; a microsecond before, another card may still be tried."""
    p = await paying(api, conn)
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() + $2::text::interval "
                           "WHERE hold_id = $1", p.hold_id, left)
        declined = await apply(conn, p.operation_id, "DECLINED", failure="card_declined")
    if another_card:
        assert declined["order_status"] == "PENDING"
        assert await state(conn, p) == ("HELD", "PENDING", "DECLINED", ["HELD", "HELD"])
    else:
        assert declined["order_status"] == "FAILED"
        assert await state(conn, p) == ("EXPIRED", "FAILED", "DECLINED",
                                        ["AVAILABLE", "AVAILABLE"])
        assert await releases(conn, p) == ["payment_failed", "payment_failed"]
    await audit_clean(conn)


async def _held(conn: Any, event_id: int, account: uuid.UUID, seat_ids: list[int]) -> uuid.UUID:
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, $3, 'd', $4)",
                              event_id, account, uuid.uuid4().hex, seat_ids)
    assert row["status_code"] == 201, dict(row)
    return uuid.UUID(row["body"]["hold_id"])


async def test_checkout_counts_only_the_accounts_live_holds_of_this_event(
        api: Api, conn: Any) -> None:
    """The checkout's limit counts this account's holds of this event that are live
    (paying, sold, or held before their deadline): not a hold whose deadline is now(),
    not a released one, not another account's, not one at another event, and it is
    this event's limit that applies (an earlier event allows 1). now() is fixed inside
    a transaction."""
    account = await api.account(conn)
    elsewhere = await api.create_event(seats=5, max_tickets_per_account=1)
    await _held(conn, elsewhere, account, [1])
    event_id = await api.create_event(seats=10, max_tickets_per_account=2)
    lapsed = await _held(conn, event_id, account, [1, 2])
    await conn.execute("UPDATE holds SET expires_at = now() - interval '1 second' "
                       "WHERE hold_id = $1", lapsed)
    await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() - interval '1 second' "
                       "WHERE hold_id = $1", lapsed)
    released = await _held(conn, event_id, account, [6])
    await conn.fetchval("SELECT onsale_release($1, $2)", released, account)
    await _held(conn, event_id, await api.account(conn), [5])
    paying_for = await _held(conn, event_id, account, [3, 4])
    async with conn.transaction():  # the lapsed hold's deadline: exactly now()
        await conn.execute("UPDATE holds SET expires_at = now() WHERE hold_id = $1", lapsed)
        await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() "
                           "WHERE hold_id = $1", lapsed)
        begun = await _begin(conn, paying_for, account)
    assert begun["order_id"] is not None
    statuses = {r["hold_id"]: r["status"] for r in await conn.fetch(
        "SELECT hold_id, status FROM holds WHERE account_id = $1", account)}
    assert (statuses[lapsed], statuses[released], statuses[paying_for]) == \
        ("HELD", "RELEASED", "PAYMENT_PENDING")
    await audit_clean(conn)


@pytest.mark.parametrize("ended", ["deadline_now", "released"])
async def test_checkout_refuses_a_hold_that_has_ended_and_says_how(
        api: Api, conn: Any, ended: str) -> None:
    """A hold whose deadline is now() (not swept yet) or that its owner released is
    refused as hold_expired, naming its state (EXPIRED, RELEASED), even when the time
    left to pay is also too short: an ended hold is not one about to end."""
    event_id = await api.create_event(seats=10)
    account = await api.account(conn)
    hold_id = await _held(conn, event_id, account, [1, 2])
    if ended == "released":
        await conn.fetchval("SELECT onsale_release($1, $2)", hold_id, account)
    async with conn.transaction():
        if ended == "deadline_now":
            await conn.execute("UPDATE holds SET expires_at = now() WHERE hold_id = $1", hold_id)
            await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() "
                               "WHERE hold_id = $1", hold_id)
        with pytest.raises(asyncpg.PostgresError) as caught:
            await _begin(conn, hold_id, account, 30)
    exc: Any = caught.value
    assert (exc.sqlstate, exc.args[0]) == ("OS409", "hold_expired")
    assert json.loads(exc.detail) == {
        "hold_status": "EXPIRED" if ended == "deadline_now" else "RELEASED"}
    assert await conn.fetchval("SELECT count(*) FROM orders") == 0
    await audit_clean(conn)


async def test_checkout_judges_the_deadline_by_the_clock_after_its_locks(
        api: Api, conn: Any) -> None:
    """now() is when the transaction began; a hold whose deadline passes while the
    checkout runs (waiting for its seats' locks) is refused by the clock, not paid
    for. Here the deadline is a microsecond after the transaction's start, and the
    clock has moved past it (pg_sleep) before the checkout begins."""
    event_id = await api.create_event(seats=10)
    account = await api.account(conn)
    hold_id = await _held(conn, event_id, account, [1])
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() + interval '1 microsecond' "
                           "WHERE hold_id = $1", hold_id)
        await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() + "
                           "interval '1 microsecond' WHERE hold_id = $1", hold_id)
        await conn.execute("SELECT pg_sleep(0.002)")
        assert await conn.fetchval("SELECT clock_timestamp() > expires_at FROM holds "
                                   "WHERE hold_id = $1", hold_id)
        with pytest.raises(asyncpg.PostgresError) as caught:
            await _begin(conn, hold_id, account)
    exc: Any = caught.value
    assert (exc.sqlstate, exc.args[0]) == ("OS409", "hold_expired")
    assert await conn.fetchval("SELECT count(*) FROM orders") == 0
    await audit_clean(conn)


async def test_a_failed_capture_is_compensated_whatever_tickets_other_orders_have(
        api: Api, conn: Any) -> None:
    """The compensation stops only for tickets of its own order: another order's,
    issued after its capture, change nothing."""
    other = await paying(api, conn)
    sold = await apply(conn, other.operation_id, "AUTHORIZED")
    await apply(conn, uuid.UUID(sold["follow_up"]["operation_id"]), "CAPTURED")
    assert await conn.fetchval("SELECT onsale_issue_tickets($1)", other.order_id) == "issued"
    p = await paying(api, conn)
    sold = await apply(conn, p.operation_id, "AUTHORIZED")
    failed = await apply(conn, uuid.UUID(sold["follow_up"]["operation_id"]), "CAPTURE_FAILED",
                         None, "expired_for_capture")
    assert (failed["order_status"], failed["payment_status"]) == ("CANCELLED", "CAPTURE_FAILED")
    assert await state(conn, p) == ("RELEASED", "CANCELLED", "CAPTURE_FAILED",
                                    ["AVAILABLE", "AVAILABLE"])
    assert await state(conn, other) == ("CONFIRMED", "CONFIRMED", "CAPTURED", ["SOLD", "SOLD"])
    await audit_clean(conn)


@pytest.mark.parametrize("open_as", ["PENDING", "UNKNOWN", "REQUIRES_ACTION"])
async def test_a_confirmed_void_ends_an_open_authorization_in_any_open_state(
        api: Api, conn: Any, open_as: str) -> None:
    """The reconciler abandons an authorization that is still open past its grace,
    never answered, answered UNKNOWN, or waiting for 3-D Secure: once the provider
    confirms the void, the authorization fails and the seats go, in each case."""
    p = await paying(api, conn)
    if open_as != "PENDING":
        await apply(conn, p.operation_id, open_as, None if open_as == "UNKNOWN" else "pi_1")
    void_id = await conn.fetchval("SELECT onsale_payment_abandon($1, 'pi_1')", p.operation_id)
    voided = await apply(conn, void_id, "VOIDED")
    assert (voided["applied"], voided["order_status"]) == (True, "FAILED")
    assert await state(conn, p) == ("EXPIRED", "FAILED", "VOIDED", ["AVAILABLE", "AVAILABLE"])
    row = await conn.fetchrow("SELECT status, failure_code FROM payment_operations "
                              "WHERE operation_id = $1", p.operation_id)
    assert (row["status"], row["failure_code"]) == ("FAILED", "voided")
    assert await releases(conn, p) == ["payment_failed", "payment_failed"]
    assert await conn.fetchval("SELECT cancel_reason FROM orders WHERE order_id = $1",
                               p.order_id) == "payment_not_completed"
    await audit_clean(conn)
