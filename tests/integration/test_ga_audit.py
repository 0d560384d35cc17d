"""The audit catches each kind of general-admission violation it claims to check.

Each case starts from a clean audit (GA events, holds and sales made through the API
and the checkout's database steps), breaks one invariant behind the core's back (as a
bug or a manual edit would) and expects exactly the matching check to report it.
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest

from onsale.core.audit import run_audit
from tests.conftest import Api, audit_clean
from tests.integration.test_ga_holds import floor, ga_event, take


async def _failing(conn: Any) -> set[str]:
    return {name for name, rows in (await run_audit(conn)).items() if rows}


async def _rows(conn: Any, check: str) -> list[dict[str, Any]]:
    return (await run_audit(conn))[check]


async def _event(api: Api, capacity: int = 10, stripes: int = 2) -> int:
    return await ga_event(api, floor(capacity=capacity, stripes=stripes),
                          max_tickets_per_account=10)


async def _hold(api: Api, conn: Any, event_id: int, quantity: int,
                account: uuid.UUID | None = None) -> tuple[uuid.UUID, uuid.UUID]:
    """A GA hold made over the API: (hold id, account id)."""
    account = account or await api.account(conn)
    async with api.client(account) as c:
        r = await take(c, event_id, quantity)
    assert r.status_code == 201, r.text
    return uuid.UUID(r.json()["hold_id"]), account


async def _sell(conn: Any, hold_id: uuid.UUID, account: uuid.UUID, *,
                capture: bool = False) -> uuid.UUID:
    """Checkout's database steps with an approving provider: the order, confirmed
    (and, with capture, captured and its tickets issued)."""
    begun = await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, $3, 'd', 'card_4242', 600, 0, 30)",
        hold_id, account, uuid.uuid4().hex)
    result = await conn.fetchval(
        "SELECT onsale_payment_apply($1, 'AUTHORIZED', $2, NULL, NULL, 'test', 30)",
        begun["operation_id"], f"pi_{uuid.uuid4().hex[:12]}")
    assert result["order_status"] == "CONFIRMED", result
    order_id = uuid.UUID(str(result["order_id"]))
    if capture:
        follow = result["follow_up"]
        assert follow["kind"] == "CAPTURE", result
        captured = await conn.fetchval(
            "SELECT onsale_payment_apply($1, 'CAPTURED', NULL, NULL, NULL, 'test', 30)",
            uuid.UUID(str(follow["operation_id"])))
        assert captured["payment_status"] == "CAPTURED", captured
        assert await conn.fetchval("SELECT onsale_issue_tickets($1)", order_id) == "issued"
    return order_id


async def _places(conn: Any, hold_id: uuid.UUID) -> list[dict[str, Any]]:
    rows = await conn.fetch("SELECT stripe, quantity, status FROM ga_hold_places "
                            "WHERE hold_id = $1 ORDER BY stripe", hold_id)
    return [dict(r) for r in rows]


# --- ga_capacity_conserved ------------------------------------------------------------------


@pytest.mark.parametrize("corruption", [
    # a place appears from nowhere on a stripe
    "UPDATE ga_buckets SET available = available + 1 WHERE event_id = $1 AND stripe = 0",
    # a place vanishes from a stripe
    "UPDATE ga_buckets SET available = available - 1 WHERE event_id = $1 AND stripe = 1 "
    "AND available > 0",
    # the tier's capacity raised without adding places
    "UPDATE ga_tiers SET capacity = capacity + 5 WHERE event_id = $1",
], ids=["place-added", "place-lost", "capacity-edited"])
async def test_capacity_not_conserved_is_reported(api: Api, conn: Any, corruption: str) -> None:
    event_id = await _event(api, capacity=10, stripes=2)
    await _hold(api, conn, event_id, 3)
    await audit_clean(conn)
    assert await conn.execute(corruption, event_id) == "UPDATE 1"
    assert await _failing(conn) == {"ga_capacity_conserved"}
    (row,) = await _rows(conn, "ga_capacity_conserved")
    assert (row["event_id"], row["tier_id"]) == (event_id, 1)
    assert row["counted"] != row["capacity"]


# --- ga_no_stripe_negative ------------------------------------------------------------------


async def test_a_negative_stripe_is_reported(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=10, stripes=2)
    await _hold(api, conn, event_id, 2)
    await audit_clean(conn)
    for (name,) in await conn.fetch(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'ga_buckets'::regclass "
            "AND contype = 'c'"):
        await conn.execute(f'ALTER TABLE ga_buckets DROP CONSTRAINT "{name}"')
    # Stripe 0 oversold by one place, which stripe 1 gained: the tier's total is
    # unchanged, so only the sign is wrong.
    a0 = await conn.fetchval("SELECT available FROM ga_buckets WHERE event_id = $1 "
                             "AND stripe = 0", event_id)
    await conn.execute("UPDATE ga_buckets SET available = CASE stripe WHEN 0 THEN -1 "
                       "ELSE available + $2 END WHERE event_id = $1", event_id, a0 + 1)
    assert await _failing(conn) == {"ga_no_stripe_negative"}
    (row,) = await _rows(conn, "ga_no_stripe_negative")
    assert (row["event_id"], row["stripe"], row["available"]) == (event_id, 0, -1)


# --- ga_places_counted_once -----------------------------------------------------------------


@pytest.mark.parametrize("corruption", [
    # a held place silently back in the stripe's available, its hold still owning it
    "UPDATE ga_buckets SET held = held - 1, available = available + 1 "
    "WHERE event_id = $1 AND stripe = $2",
    # a held place counted as sold
    "UPDATE ga_buckets SET held = held - 1, sold = sold + 1 "
    "WHERE event_id = $1 AND stripe = $2",
    # a place counted as held that no hold has
    "UPDATE ga_buckets SET held = held + 1, available = available - 1 "
    "WHERE event_id = $1 AND stripe = $2",
], ids=["held-as-available", "held-as-sold", "held-by-nobody"])
async def test_places_counted_wrongly_are_reported(api: Api, conn: Any, corruption: str) -> None:
    event_id = await _event(api, capacity=20, stripes=2)
    hold_id, _ = await _hold(api, conn, event_id, 3)
    await audit_clean(conn)
    stripe = (await _places(conn, hold_id))[0]["stripe"]
    assert await conn.execute(corruption, event_id, stripe) == "UPDATE 1"
    assert await _failing(conn) == {"ga_places_counted_once"}
    (row,) = await _rows(conn, "ga_places_counted_once")
    assert (row["event_id"], row["stripe"]) == (event_id, stripe)


# --- ga_holds_own_their_places --------------------------------------------------------------


async def test_a_released_hold_that_kept_its_places_is_reported(api: Api, conn: Any) -> None:
    event_id = await _event(api)
    hold_id, _ = await _hold(api, conn, event_id, 3)
    await audit_clean(conn)
    # Ended without giving its places back (the stripes still count them as held).
    await conn.execute("UPDATE holds SET status = 'RELEASED' WHERE hold_id = $1", hold_id)
    assert await _failing(conn) == {"ga_holds_own_their_places"}
    (row,) = await _rows(conn, "ga_holds_own_their_places")
    assert (row["hold_id"], row["status"], row["held"]) == (hold_id, "RELEASED", 3)


async def test_a_live_hold_whose_places_were_given_back_is_reported(
        api: Api, conn: Any) -> None:
    event_id = await _event(api)
    hold_id, _ = await _hold(api, conn, event_id, 3)
    await audit_clean(conn)
    # The places returned to the stripes (counts kept consistent) behind a live hold.
    await conn.execute(
        "WITH r AS (UPDATE ga_hold_places SET status = 'RETURNED' WHERE hold_id = $1 "
        "RETURNING event_id, tier_id, stripe, quantity) "
        "UPDATE ga_buckets b SET held = b.held - r.quantity, available = b.available + r.quantity "
        "FROM r WHERE b.event_id = r.event_id AND b.tier_id = r.tier_id AND b.stripe = r.stripe",
        hold_id)
    # (and no release gave them back)
    assert await _failing(conn) == {"ga_holds_own_their_places", "ga_returned_places_were_released"}
    (row,) = await _rows(conn, "ga_holds_own_their_places")
    assert (row["hold_id"], row["status"], row["held"], row["quantity"]) \
        == (hold_id, "HELD", 0, 3)


async def test_an_expired_hold_not_yet_swept_still_holds_its_places_cleanly(
        api: Api, conn: Any) -> None:
    # The check's tolerance: past its deadline, before the sweep, a hold keeps them.
    event_id = await _event(api)
    hold_id, _ = await _hold(api, conn, event_id, 3)
    await conn.execute("UPDATE holds SET expires_at = now() - interval '1 second' "
                       "WHERE hold_id = $1", hold_id)
    await audit_clean(conn)
    # ...but never as sold.
    await conn.execute("UPDATE ga_hold_places SET status = 'SOLD' WHERE hold_id = $1", hold_id)
    await conn.execute("UPDATE ga_buckets SET sold = sold + held, held = 0 WHERE event_id = $1",
                       event_id)
    assert "ga_holds_own_their_places" in await _failing(conn)


# --- ga_sold_places_point_to_confirmed_orders -----------------------------------------------


# (it also leaves an ended order owning places: ga_ended_orders_own_no_places)
CANCEL_ORDER = "UPDATE orders SET status = 'CANCELLED' WHERE order_id = $1"


@pytest.mark.parametrize("corruption", [
    # the order's GA line invalidated, the places still sold to it
    "UPDATE ga_order_items SET valid = false WHERE order_id = $1",
    # the order cancelled, the places still sold
    CANCEL_ORDER,
    # the order's GA line for another tier than the places'
    "UPDATE ga_order_items SET tier_id = 2 WHERE order_id = $1",
], ids=["line-invalid", "order-cancelled", "line-other-tier"])
async def test_sold_places_without_a_confirmed_order_are_reported(
        api: Api, conn: Any, corruption: str) -> None:
    event_id = await _event(api, capacity=10, stripes=2)
    hold_id, account = await _hold(api, conn, event_id, 3)
    order_id = await _sell(conn, hold_id, account)
    assert {p["status"] for p in await _places(conn, hold_id)} == {"SOLD"}
    await audit_clean(conn)
    assert await conn.execute(corruption, order_id) == "UPDATE 1"
    also = {"ga_ended_orders_own_no_places"} if corruption == CANCEL_ORDER else set()
    if "tier_id = 2" in corruption:  # the line no longer is the hold's either
        also = {"ga_order_lines_match_their_places"}
    assert await _failing(conn) == {"ga_sold_places_point_to_confirmed_orders"} | also
    rows = await _rows(conn, "ga_sold_places_point_to_confirmed_orders")
    assert {r["hold_id"] for r in rows} == {hold_id}
    assert sum(r["quantity"] for r in rows) == 3


async def test_sold_places_of_a_hold_without_an_order_are_reported(
        api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=10, stripes=2)
    hold_id, _ = await _hold(api, conn, event_id, 2)
    await audit_clean(conn)
    # Sold with every count consistent (hold confirmed, stripes moved), but no order.
    await conn.execute("UPDATE holds SET status = 'CONFIRMED' WHERE hold_id = $1", hold_id)
    await conn.execute(
        "WITH s AS (UPDATE ga_hold_places SET status = 'SOLD' WHERE hold_id = $1 "
        "RETURNING event_id, tier_id, stripe, quantity) "
        "UPDATE ga_buckets b SET held = b.held - s.quantity, sold = b.sold + s.quantity "
        "FROM s WHERE b.event_id = s.event_id AND b.tier_id = s.tier_id AND b.stripe = s.stripe",
        hold_id)
    assert await _failing(conn) == {"ga_sold_places_point_to_confirmed_orders"}
    rows = await _rows(conn, "ga_sold_places_point_to_confirmed_orders")
    assert {(r["hold_id"], r["order_id"]) for r in rows} == {(hold_id, None)}


# --- ga_releases_touch_only_their_hold ------------------------------------------------------


# corruption, and whose hold id is $1: the released hold's or the live one's
RELEASE_CASES = {
    # a "release" of places a live hold still has
    "of-a-live-hold": (
        "INSERT INTO ga_releases (hold_id, event_id, tier_id, stripe, quantity, prior_status, "
        "prior_hold_status, prior_expires_at, reason) "
        "SELECT hold_id, event_id, tier_id, stripe, quantity, 'HELD', 'HELD', "
        "now() + interval '5 minutes', 'released' FROM ga_hold_places WHERE hold_id = $1",
        "live"),
    # the same places returned twice (the unique index ga_releases_once refuses that
    # at write time: the audit is the second guard)
    "twice": (
        "INSERT INTO ga_releases (hold_id, event_id, tier_id, stripe, quantity, prior_status, "
        "prior_hold_status, prior_expires_at, reason, released_at) "
        "SELECT hold_id, event_id, tier_id, stripe, quantity, prior_status, prior_hold_status, "
        "prior_expires_at, reason, released_at FROM ga_releases WHERE hold_id = $1",
        "released"),
    # an "expiry" of a hold before its deadline
    "expired-early": (
        "UPDATE ga_releases SET reason = 'expired' WHERE hold_id = $1", "released"),
    # more places given back than the hold had there
    "more-than-held": (
        "UPDATE ga_releases SET quantity = quantity + 1 WHERE hold_id = $1", "released"),
    # places in payment returned by a plain release
    "in-payment": (
        "UPDATE ga_releases SET prior_hold_status = 'PAYMENT_PENDING' WHERE hold_id = $1",
        "released"),
    # a "release" by its owner after the deadline (that is an expiry)
    "released-late": (
        "UPDATE ga_releases SET prior_expires_at = released_at - interval '1 second' "
        "WHERE hold_id = $1", "released"),
    # places in payment returned while the authorization was still open
    "payment-failed-while-open": (
        "WITH o AS (INSERT INTO orders (hold_id, event_id, account_id, status, amount_minor, "
        "currency) SELECT hold_id, event_id, account_id, 'FAILED', amount_minor, currency "
        "FROM holds WHERE hold_id = $1 RETURNING order_id, amount_minor, currency), "
        "op AS (INSERT INTO payment_operations (order_id, kind, amount_minor, currency) "
        "SELECT order_id, 'AUTHORIZE', amount_minor, currency FROM o) "
        "UPDATE ga_releases SET reason = 'payment_failed', prior_hold_status = 'PAYMENT_PENDING' "
        "WHERE hold_id = $1", "released"),
    # sold places returned with no audited compensation
    "compensated-unaudited": (
        "UPDATE ga_releases SET reason = 'compensated', prior_status = 'SOLD', "
        "prior_hold_status = 'CONFIRMED' WHERE hold_id = $1", "released"),
}


@pytest.mark.parametrize("case", sorted(RELEASE_CASES))
async def test_releases_that_touch_more_than_their_hold_are_reported(
        api: Api, conn: Any, case: str) -> None:
    event_id = await _event(api, capacity=20, stripes=2)
    released, owner = await _hold(api, conn, event_id, 2)
    async with api.client(owner) as c:
        r = await c.delete(f"/api/holds/{released}")
    assert r.status_code == 200 and r.json()["status"] == "RELEASED", r.text
    live, _ = await _hold(api, conn, event_id, 3)
    assert await conn.fetchval("SELECT count(*) FROM ga_releases WHERE hold_id = $1",
                               released) >= 1
    await audit_clean(conn)
    sql, whose = RELEASE_CASES[case]
    if case == "twice":
        with pytest.raises(asyncpg.UniqueViolationError):
            await conn.execute(sql, released)
        await conn.execute("DROP INDEX ga_releases_once")  # past the first guard
    status = await conn.execute(sql, live if whose == "live" else released)
    assert not status.endswith(" 0"), status  # the corruption touched something
    assert await _failing(conn) == {"ga_releases_touch_only_their_hold"}
    rows = await _rows(conn, "ga_releases_touch_only_their_hold")
    assert {r["hold_id"] for r in rows} == {live if whose == "live" else released}


# --- tickets_only_for_paid_orders, for GA tickets -------------------------------------------


@pytest.mark.parametrize(("tier_id", "place"), [(1, 4), (1, 0), (2, 1)],
                         ids=["place-beyond-quantity", "place-zero", "tier-not-bought"])
async def test_a_ga_ticket_for_a_place_not_bought_is_reported(
        api: Api, conn: Any, tier_id: int, place: int) -> None:
    event_id = await _event(api, capacity=10, stripes=2)
    hold_id, account = await _hold(api, conn, event_id, 3)
    order_id = await _sell(conn, hold_id, account, capture=True)
    issued = await conn.fetch("SELECT ga_tier_id, place FROM tickets WHERE order_id = $1 "
                              "ORDER BY place", order_id)
    assert [tuple(t) for t in issued] == [(1, 1), (1, 2), (1, 3)]
    await audit_clean(conn)  # a ticket per bought place is clean
    ticket_id = await conn.fetchval(
        "INSERT INTO tickets (order_id, event_id, ga_tier_id, place, code) "
        "VALUES ($1, $2, $3, $4, md5(random()::text)) RETURNING ticket_id",
        order_id, event_id, tier_id, place)
    assert await _failing(conn) == {"tickets_only_for_paid_orders"}
    rows = await _rows(conn, "tickets_only_for_paid_orders")
    assert [(r["ticket_id"], r["order_id"]) for r in rows] == [(ticket_id, order_id)]


async def test_a_ga_ticket_of_a_compensated_line_is_reported(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=10, stripes=2)
    hold_id, account = await _hold(api, conn, event_id, 2)
    order_id = await _sell(conn, hold_id, account, capture=True)
    await audit_clean(conn)
    # The line invalidated (as a compensation would) with its tickets left standing.
    await conn.execute("UPDATE ga_order_items SET valid = false WHERE order_id = $1", order_id)
    assert "tickets_only_for_paid_orders" in await _failing(conn)
    assert len(await _rows(conn, "tickets_only_for_paid_orders")) == 2


# --- ga_ended_orders_own_no_places ----------------------------------------------------------


async def test_an_ended_order_that_kept_its_line_or_places_is_reported(
        api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=10, stripes=2)
    hold_id, account = await _hold(api, conn, event_id, 2)
    order_id = await _sell(conn, hold_id, account)
    await audit_clean(conn)
    # Cancelled behind the places' back: the line still valid, the places still sold.
    await conn.execute("UPDATE orders SET status = 'CANCELLED' WHERE order_id = $1", order_id)
    rows = await _rows(conn, "ga_ended_orders_own_no_places")
    assert {r["problem"] for r in rows} == {"valid line", "places not returned"}
    assert {r["order_id"] for r in rows} == {order_id}


# --- ga_returned_places_were_released -------------------------------------------------------


async def test_places_returned_without_a_release_are_reported(api: Api, conn: Any) -> None:
    event_id = await _event(api)
    hold_id, account = await _hold(api, conn, event_id, 2)
    async with api.client(account) as c:
        assert (await c.delete(f"/api/holds/{hold_id}")).status_code == 200
    await audit_clean(conn)  # a release gave them back, with its record
    # The record of that return lost: the places show as returned by nobody.
    await conn.execute("DELETE FROM ga_releases WHERE hold_id = $1", hold_id)
    assert await _failing(conn) == {"ga_returned_places_were_released"}
    rows = await _rows(conn, "ga_returned_places_were_released")
    assert {r["hold_id"] for r in rows} == {hold_id}
    assert sum(r["quantity"] for r in rows) == 2


# --- ga_order_lines_match_their_places ------------------------------------------------------


@pytest.mark.parametrize("corruption", [
    # the line says more places than were sold
    "UPDATE ga_order_items SET quantity = quantity + 1 WHERE order_id = $1",
    # the line's price no longer makes the order's amount
    "UPDATE ga_order_items SET price_minor = price_minor - 1 WHERE order_id = $1",
    # the line names another tier than the hold's
    "UPDATE ga_order_items SET tier_id = 2 WHERE order_id = $1",
])
async def test_an_order_line_unlike_its_sold_places_is_reported(
        api: Api, conn: Any, corruption: str) -> None:
    event_id = await ga_event(api, floor(capacity=10, stripes=2),
                              {**floor(capacity=10, stripes=1), "name": "Balcony"},
                              max_tickets_per_account=10)
    hold_id, account = await _hold(api, conn, event_id, 3)
    order_id = await _sell(conn, hold_id, account)
    await audit_clean(conn)
    await conn.execute(corruption, order_id)
    assert "ga_order_lines_match_their_places" in await _failing(conn)
    (row,) = await _rows(conn, "ga_order_lines_match_their_places")
    assert (row["order_id"], row["places_sold"], row["hold_quantity"]) == (order_id, 3, 3)


async def test_sold_places_fewer_than_the_line_are_reported(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=10, stripes=1)
    hold_id, account = await _hold(api, conn, event_id, 3)
    order_id = await _sell(conn, hold_id, account)
    await audit_clean(conn)
    # One sold place taken off the hold (and the stripe kept consistent with it).
    await conn.execute("UPDATE ga_hold_places SET quantity = quantity - 1 WHERE hold_id = $1",
                       hold_id)
    await conn.execute("UPDATE ga_buckets SET sold = sold - 1, available = available + 1 "
                       "WHERE event_id = $1", event_id)
    assert "ga_order_lines_match_their_places" in await _failing(conn)
    (row,) = await _rows(conn, "ga_order_lines_match_their_places")
    assert (row["order_id"], row["quantity"], row["places_sold"]) == (order_id, 3, 2)


# --- ga_holds_within_tier_limit -------------------------------------------------------------


async def test_an_account_over_its_tier_limit_is_reported(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=20, stripes=2, max_per_account=4),
                              max_tickets_per_account=10)
    _, account = await _hold(api, conn, event_id, 4)
    async with api.client(account) as c:  # the tier's limit is enforced at write time
        r = await take(c, event_id, 1)
    assert r.status_code == 409 and r.json()["code"] == "ticket_limit_exceeded", r.text
    await audit_clean(conn)
    # The limit lowered behind the hold's back (no route changes it after creation).
    await conn.execute("UPDATE ga_tiers SET max_per_account = 3 WHERE event_id = $1", event_id)
    assert await _failing(conn) == {"ga_holds_within_tier_limit"}
    (row,) = await _rows(conn, "ga_holds_within_tier_limit")
    assert (row["account_id"], row["owned"], row["max_per_account"]) == (account, 4, 3)
