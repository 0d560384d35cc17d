"""The audit catches each kind of violation it claims to check.

Each case breaks one invariant behind the core's back (as a bug or a manual
edit would) and expects exactly the matching check to report it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from onsale.core.audit import run_audit
from tests.conftest import Api, audit_clean


async def _hold(conn: Any, event_id: int, account: uuid.UUID, seats: list[int],
                key: str | None = None) -> uuid.UUID:
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, $3, 'd', $4)",
                              event_id, account, key or uuid.uuid4().hex, seats)
    assert row["status_code"] == 201, row
    return uuid.UUID(row["body"]["hold_id"])


async def _failing(conn: Any) -> set[str]:
    return {name for name, rows in (await run_audit(conn)).items() if rows}


async def _drop_checks(conn: Any) -> None:
    for name in await conn.fetch(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'seat_inventory'::regclass "
            "AND contype = 'c'"):
        await conn.execute(f'ALTER TABLE seat_inventory DROP CONSTRAINT "{name[0]}"')


# check name -> SQL that breaks it; $1 event id, $2 a stranger's id, $3 the hold id.
CASES = {
    "live_holds_own_all_their_seats":
        # a live hold's seat silently handed to another hold
        "UPDATE seat_inventory SET hold_id = $2 WHERE event_id = $1 AND seat_id = 2 "
        "AND $3::uuid IS NOT NULL",
    "held_seats_belong_to_their_hold":
        "UPDATE seat_inventory SET status = 'PAYMENT_PENDING' WHERE event_id = $1 AND seat_id = 1 "
        "AND $2::uuid <> $3::uuid",
    "replays_created_no_new_state":
        "UPDATE idempotency_keys SET resource_id = $2 WHERE resource_id = $3 AND $1::bigint > 0",
    "releases_touch_only_their_hold":
        # an "expiry" of a hold an hour before its deadline
        "INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status, "
        "prior_expires_at, reason) SELECT $3, $1, 1, $3, 'HELD', now() + interval '1 hour', "
        "'expired' WHERE $2::uuid IS NOT NULL",
    "payment_pending_holds_have_an_open_payment":
        # a hold left in payment with no authorization on its way
        "UPDATE holds SET status = 'PAYMENT_PENDING' WHERE hold_id = $3 AND $1::bigint > 0 "
        "AND $2::uuid IS NOT NULL",
    "confirmed_orders_were_authorized":
        "INSERT INTO orders (hold_id, event_id, account_id, status, amount_minor, currency) "
        "SELECT hold_id, event_id, account_id, 'CONFIRMED', 1, 'USD' FROM holds "
        "WHERE hold_id = $3 AND event_id = $1 AND $2::uuid IS NOT NULL",
    "tickets_only_for_paid_orders":
        "WITH o AS (INSERT INTO orders (hold_id, event_id, account_id, status, amount_minor, "
        "currency) SELECT hold_id, event_id, account_id, 'PENDING', 1, 'USD' FROM holds "
        "WHERE hold_id = $3 AND $2::uuid IS NOT NULL RETURNING order_id) "
        "INSERT INTO tickets (order_id, event_id, seat_id, code) "
        "SELECT order_id, $1, 1, md5(random()::text) FROM o",
    "ended_orders_own_no_seats":
        "WITH o AS (INSERT INTO orders (hold_id, event_id, account_id, status, amount_minor, "
        "currency) SELECT hold_id, event_id, account_id, 'FAILED', 1, 'USD' FROM holds "
        "WHERE hold_id = $3 AND $2::uuid IS NOT NULL RETURNING order_id) "
        "UPDATE seat_inventory SET order_id = (SELECT order_id FROM o) "
        "WHERE event_id = $1 AND seat_id = 1",
    "sold_seats_point_to_confirmed_orders":
        "UPDATE seat_inventory SET status = 'SOLD', order_id = $2 WHERE event_id = $1 "
        "AND seat_id = 9 AND $3::uuid IS NOT NULL",
}


@pytest.mark.parametrize("check", sorted(CASES))
async def test_each_check_catches_its_violation(api: Api, conn: Any, check: str) -> None:
    event_id = await api.create_event(seats=10)
    account = await api.account(conn)
    hold_id = await _hold(conn, event_id, account, [1, 2])
    await audit_clean(conn)
    await _drop_checks(conn)
    await conn.execute(CASES[check], event_id, uuid.uuid4(), hold_id)
    assert check in await _failing(conn)


async def _sold(conn: Any, event_id: int, hold_id: uuid.UUID) -> uuid.UUID:
    """The hold's seats sold to a CONFIRMED order, as the sale step leaves them."""
    order_id: uuid.UUID = await conn.fetchval(
        "INSERT INTO orders (hold_id, event_id, account_id, status, amount_minor, currency) "
        "SELECT hold_id, event_id, account_id, 'CONFIRMED', 1, 'USD' FROM holds "
        "WHERE hold_id = $1 RETURNING order_id", hold_id)
    await conn.execute("INSERT INTO order_items (order_id, event_id, seat_id, price_minor) "
                       "SELECT $1, event_id, s, 1 FROM holds, unnest(seat_ids) s "
                       "WHERE hold_id = $2", order_id, hold_id)
    await conn.execute("UPDATE seat_inventory SET status = 'SOLD', order_id = $1, "
                       "hold_expires_at = NULL WHERE hold_id = $2", order_id, hold_id)
    await conn.execute("UPDATE holds SET status = 'CONFIRMED' WHERE hold_id = $1", hold_id)
    return order_id


@pytest.mark.parametrize("contradiction", [
    # a confirmed hold turned EXPIRED (or RELEASED) while its seats stayed SOLD
    "UPDATE holds SET status = 'EXPIRED' WHERE hold_id = $1",
    "UPDATE holds SET status = 'RELEASED' WHERE hold_id = $1",
    # a confirmed hold whose seat went back to AVAILABLE, or to HELD
    "UPDATE seat_inventory SET status = 'AVAILABLE', hold_id = NULL, order_id = NULL "
    "WHERE hold_id = $1 AND seat_id = 2",
    "UPDATE seat_inventory SET status = 'HELD', order_id = NULL, "
    "hold_expires_at = now() + interval '1 h' WHERE hold_id = $1 AND seat_id = 2",
])
async def test_a_hold_whose_state_contradicts_its_seats_is_reported(
        api: Api, conn: Any, contradiction: str) -> None:
    event_id = await api.create_event(seats=10)
    hold_id = await _hold(conn, event_id, await api.account(conn), [1, 2])
    await _sold(conn, event_id, hold_id)
    failing = await _failing(conn)
    assert "confirmed_holds_agree_with_their_seats" not in failing, failing
    await _drop_checks(conn)
    await conn.execute(contradiction, hold_id)
    assert "confirmed_holds_agree_with_their_seats" in await _failing(conn)


async def test_a_hold_without_its_key_record_is_reported(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10)
    await _hold(conn, event_id, await api.account(conn), [3], key="k")
    await conn.execute("DELETE FROM idempotency_keys WHERE key = 'k'")
    assert await _failing(conn) == {"replays_created_no_new_state"}


async def test_over_limit_and_double_sale_are_reported(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10, max_tickets_per_account=2)
    account = await api.account(conn)
    await _hold(conn, event_id, account, [1, 2])
    await conn.execute("UPDATE events SET max_tickets_per_account = 1")
    assert "active_holds_within_account_limit" in await _failing(conn)

    await conn.execute("UPDATE events SET max_tickets_per_account = 2")
    orders = []
    for _ in range(2):
        hold_id = await _hold(conn, event_id, await api.account(conn), [5])
        await conn.execute("UPDATE seat_inventory SET status = 'AVAILABLE', hold_id = NULL, "
                           "hold_expires_at = NULL WHERE event_id = $1 AND seat_id = 5", event_id)
        orders.append(await conn.fetchval(
            "INSERT INTO orders (hold_id, event_id, account_id, status, amount_minor, currency) "
            "SELECT hold_id, event_id, account_id, 'CONFIRMED', 1, 'USD' FROM holds "
            "WHERE hold_id = $1 RETURNING order_id", hold_id))
    await conn.execute("DROP INDEX order_items_one_valid_sale")
    for order_id in orders:
        await conn.execute("INSERT INTO order_items (order_id, event_id, seat_id, price_minor) "
                           "VALUES ($1, $2, 5, 1)", order_id, event_id)
    failing = await _failing(conn)
    assert {"one_valid_sale_per_seat", "confirmed_orders_own_their_seats"} <= failing


async def test_a_lazy_reclaim_is_logged_and_audited(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=5)
    old = await _hold(conn, event_id, await api.account(conn), [1])
    await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() - interval '1 s' "
                       "WHERE event_id = $1", event_id)
    await conn.execute("UPDATE holds SET expires_at = now() - interval '1 s'")
    new = await _hold(conn, event_id, await api.account(conn), [1])
    row = await conn.fetchrow("SELECT * FROM hold_releases")
    assert (row["reason"], row["hold_id"], row["prior_hold_id"]) == ("reclaimed", old, old)
    assert row["prior_expires_at"] <= row["released_at"]
    assert new != old
    await audit_clean(conn)
