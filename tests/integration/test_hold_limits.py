"""The per-account ticket limit at its boundaries (onsale_hold_limit, the GA tier's own
limit in onsale_ga_hold): exactly the limit is allowed and one more is not; what counts
(live holds, holds in payment, sold seats) and what does not (a hold at its deadline,
released holds, other accounts, other events). Issue 22, part 5: each case kills a
plausible one-line slip that every other test let through (scripts/mutants.py)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest

from tests.conftest import Api, audit_clean
from tests.integration.test_ga_holds import floor, ga_event


async def _hold(conn: Any, event_id: int, account: uuid.UUID, seats: list[int]) -> Any:
    return await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, $3, 'd', $4)",
                               event_id, account, uuid.uuid4().hex, seats)


async def _ga_hold(conn: Any, event_id: int, account: uuid.UUID, quantity: int) -> Any:
    return await conn.fetchrow(
        "SELECT * FROM onsale_ga_hold($1, $2, $3, 'd', 1::smallint, $4, false)",
        event_id, account, uuid.uuid4().hex, quantity)


async def _refusal(call: Any) -> dict[str, Any]:
    """The OS409 a hold raises: its message and detail."""
    import json

    with pytest.raises(asyncpg.PostgresError) as caught:
        await call
    exc: Any = caught.value
    assert exc.sqlstate == "OS409", exc
    return {"code": str(exc.args[0]) if exc.args else "", **json.loads(exc.detail)}


async def test_an_account_may_hold_exactly_its_limit_and_not_one_more(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20, max_tickets_per_account=4)
    me = await api.account(conn)
    assert (await _hold(conn, event_id, me, [1, 2, 3]))["status_code"] == 201
    assert (await _hold(conn, event_id, me, [4]))["status_code"] == 201  # 3 + 1 = 4
    over = await _refusal(_hold(conn, event_id, me, [5]))
    assert (over["code"], over["limit"], over["owned"], over["requested"]) == \
        ("ticket_limit_exceeded", 4, 4, 1)
    await audit_clean(conn)


async def test_only_this_accounts_holds_for_this_event_count(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20, max_tickets_per_account=4)
    other_event = await api.create_event(seats=20, max_tickets_per_account=4)
    me, someone = await api.account(conn), await api.account(conn)
    assert (await _hold(conn, event_id, someone, [1, 2, 3, 4]))["status_code"] == 201
    assert (await _hold(conn, other_event, me, [1, 2, 3, 4]))["status_code"] == 201
    assert (await _hold(conn, event_id, me, [5, 6, 7, 8]))["status_code"] == 201
    await audit_clean(conn)


@pytest.mark.parametrize(("offset", "counted"), [("0", False), ("1 microsecond", True)])
async def test_a_hold_at_its_deadline_no_longer_counts(
        api: Api, conn: Any, offset: str, counted: bool) -> None:
    """now() is fixed inside a transaction: a hold whose deadline is exactly now() is
    over (as the claim predicate says) and its seats are not counted; one microsecond
    later it still is."""
    event_id = await api.create_event(seats=20, max_tickets_per_account=4)
    me = await api.account(conn)
    first = await _hold(conn, event_id, me, [1, 2, 3])
    hold_id = uuid.UUID(first["body"]["hold_id"])
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() + $2::text::interval "
                           "WHERE hold_id = $1", hold_id, offset)
        await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() + "
                           "$2::text::interval WHERE hold_id = $1", hold_id, offset)
        if counted:
            over = await _refusal(_hold(conn, event_id, me, [4, 5]))
            assert (over["owned"], over["requested"]) == (3, 2)
        else:
            assert (await _hold(conn, event_id, me, [4, 5]))["status_code"] == 201
    await audit_clean(conn)


async def test_holds_in_payment_and_sold_count_and_released_ones_do_not(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20, max_tickets_per_account=4)
    me = await api.account(conn)

    async def hold_id(seats: list[int]) -> uuid.UUID:
        row = await _hold(conn, event_id, me, seats)
        assert row["status_code"] == 201, dict(row)
        return uuid.UUID(row["body"]["hold_id"])

    async def checkout(hold: uuid.UUID) -> uuid.UUID:
        begun = await conn.fetchrow(
            "SELECT * FROM onsale_checkout_begin($1, $2, $3, 'd', 'card_4242', 600, 0, 30)",
            hold, me, uuid.uuid4().hex)
        operation: uuid.UUID = begun["operation_id"]
        return operation

    paying = await checkout(await hold_id([1, 2]))  # PAYMENT_PENDING: 2
    over = await _refusal(_hold(conn, event_id, me, [3, 4, 5]))
    assert over["owned"] == 2
    sold = await conn.fetchval(
        "SELECT onsale_payment_apply($1, 'AUTHORIZED', 'pi_1', NULL, NULL, 'test', 5)", paying)
    assert sold["order_status"] == "CONFIRMED"  # CONFIRMED: still 2
    over = await _refusal(_hold(conn, event_id, me, [3, 4, 5]))
    assert over["owned"] == 2
    released = await hold_id([3, 4])  # the limit reached: 4
    await conn.fetchval("SELECT onsale_release($1, $2)", released, me)  # RELEASED: 0
    assert (await _hold(conn, event_id, me, [5, 6]))["status_code"] == 201
    await audit_clean(conn)


async def test_a_ga_tier_limit_is_exact_and_counts_only_live_holds_of_the_tier(
        api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=20, stripes=1, max_per_account=3),
                              {"name": "Balcony", "price_minor": 3000, "capacity": 10},
                              seats=0, max_tickets_per_account=10)
    me = await api.account(conn)
    # The other tier's places do not count against this tier's own limit.
    other = await conn.fetchrow(
        "SELECT * FROM onsale_ga_hold($1, $2, 'b', 'd', 2::smallint, 4, false)", event_id, me)
    assert other["status_code"] == 201, dict(other)
    first = await _ga_hold(conn, event_id, me, 2)
    assert (await _ga_hold(conn, event_id, me, 1))["status_code"] == 201  # 2 + 1 = 3
    over = await _refusal(_ga_hold(conn, event_id, me, 1))
    assert (over["code"], over["limit"], over["owned"]) == ("ticket_limit_exceeded", 3, 3)
    # A hold whose deadline is now() is over: its 2 places no longer count.
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() WHERE hold_id = $1",
                           uuid.UUID(first["body"]["hold_id"]))
        assert (await _ga_hold(conn, event_id, me, 2))["status_code"] == 201
    await audit_clean(conn)


async def _best(conn: Any, event_id: int, account: uuid.UUID, quantity: int) -> Any:
    return await conn.fetchrow(
        "SELECT * FROM onsale_hold_best($1, $2, $3, 'd', $4, NULL, false)",
        event_id, account, uuid.uuid4().hex, quantity)


@pytest.mark.parametrize("quantity", [0, 5])
async def test_best_available_takes_one_to_the_events_hold_size_in_the_database(
        api: Api, conn: Any, quantity: int) -> None:
    """The request size is checked again where the seats are taken (onsale_hold_prelude),
    against the event's own max_seats_per_hold: a caller past the API's checks (or an
    event whose limit is below the API's hard cap) gets invalid_seats, and 1 and exactly
    the limit are held."""
    event_id = await api.create_event(seats=20, max_seats_per_hold=4)
    account = await api.account(conn)
    with pytest.raises(asyncpg.PostgresError) as caught:
        await _best(conn, event_id, account, quantity)
    refused: Any = caught.value
    assert (refused.sqlstate, str(refused.args[0])) == ("OS400", "invalid_seats")
    assert (await _best(conn, event_id, account, 1))["status_code"] == 201
    assert (await _best(conn, event_id, await api.account(conn), 4))["status_code"] == 201
    await audit_clean(conn)


async def test_a_sale_opens_at_its_instant_not_after(api: Api, conn: Any) -> None:
    """At exactly onsale_at the sale is open (now() is the transaction's start, so one
    transaction sets the clock's own instant as the event's opening)."""
    event_id = await api.create_event(seats=10)
    account = await api.account(conn)
    async with conn.transaction():
        await conn.execute("UPDATE events SET onsale_at = now() WHERE event_id = $1", event_id)
        assert (await _best(conn, event_id, account, 1))["status_code"] == 201
        assert (await _hold(conn, event_id, await api.account(conn), [9]))["status_code"] == 201
    await conn.execute("UPDATE events SET onsale_at = now() + interval '1 hour' "
                       "WHERE event_id = $1", event_id)
    refused = await _refusal(_best(conn, event_id, await api.account(conn), 1))
    assert refused["code"] == "sale_not_open"
