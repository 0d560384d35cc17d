"""Expiry by database time: the exact boundary, lazy claims, late sweeps."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from onsale.core.sweeper import sweep_once
from tests.conftest import Api, asyncpg_connect, audit_clean, hold


async def _hold_in_db(conn: Any, event_id: int, account: uuid.UUID, seats: list[int]) -> Any:
    return await conn.fetchrow(
        "SELECT * FROM onsale_hold($1, $2, $3, 'd', $4)",
        event_id, account, uuid.uuid4().hex, seats)


@pytest.mark.parametrize(("offset", "claimable"), [("0", True), ("1 microsecond", False)])
async def test_exact_boundary_uses_database_time(
    api: Api, conn: Any, offset: str, claimable: bool,
) -> None:
    """now() is fixed inside a transaction, so we can place the deadline exactly
    at now() (expired: claimable) or one microsecond after it (still held)."""
    event_id = await api.create_event(seats=5)
    alice, bob = await api.account(conn), await api.account(conn)
    first = await _hold_in_db(conn, event_id, alice, [1])
    hold_id = uuid.UUID(first["body"]["hold_id"])
    async with conn.transaction():
        await conn.execute(
            "UPDATE seat_inventory SET hold_expires_at = now() + $2::text::interval "
            "WHERE event_id = $1 AND seat_id = 1", event_id, offset)
        await conn.execute("UPDATE holds SET expires_at = now() + $2::text::interval "
                           "WHERE hold_id = $1", hold_id, offset)
        second = await _hold_in_db(conn, event_id, bob, [1])
        outcome = "held" if second["status_code"] == 201 else second["body"]["code"]
    if claimable:
        assert outcome == "held"
        row = await conn.fetchrow(
            "SELECT hold_id FROM seat_inventory WHERE event_id = $1 AND seat_id = 1", event_id)
        assert str(row["hold_id"]) == second["body"]["hold_id"]
    else:
        assert outcome == "seats_unavailable"
    await audit_clean(conn)


async def test_expired_hold_is_claimable_before_any_sweep_and_late_sweep_is_harmless(
    api: Api, conn: Any,
) -> None:
    event_id = await api.create_event(seats=5, hold_ttl_seconds=1)
    alice, bob = await api.account(conn), await api.account(conn)
    async with api.client(alice) as a, api.client(bob) as b:
        old = (await hold(a, event_id, [1, 2])).json()
        assert (await hold(b, event_id, [1])).status_code == 409
        await asyncio.sleep(1.1)
        # Before any sweep the old hold reads as EXPIRED and seat 1 is free.
        assert (await a.get(f"/api/holds/{old['hold_id']}")).json()["status"] == "EXPIRED"
        new = await hold(b, event_id, [1])
        assert new.status_code == 201, new.text
    new_id = uuid.UUID(new.json()["hold_id"])
    old_id = uuid.UUID(old["hold_id"])

    # The late expiry message for the old hold releases seat 2 only.
    released = await conn.fetchval("SELECT onsale_expire_hold($1)", old_id)
    assert released == 1
    # Replayed again (a duplicate message): nothing more.
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", old_id) == 0
    # A full sweep pass now: the new hold is not due yet, so nothing.
    result = await sweep_once(conn, 100)
    assert result.seats_released == 0
    rows = {r["seat_id"]: r for r in await conn.fetch(
        "SELECT seat_id, status, hold_id FROM seat_inventory WHERE event_id = $1", event_id)}
    assert rows[1]["status"] == "HELD" and rows[1]["hold_id"] == new_id
    assert rows[2]["status"] == "AVAILABLE"
    assert await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1", old_id) == "EXPIRED"
    await audit_clean(conn)


async def test_sweeper_releases_only_expired_holds_in_batches(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=40, hold_ttl_seconds=1, max_tickets_per_account=6)
    long_event = await api.create_event(seats=10)
    for i in range(12):
        await _hold_in_db(conn, event_id, await api.account(conn), [i * 3 + 1, i * 3 + 2])
    keeper = await _hold_in_db(conn, long_event, await api.account(conn), [1])
    await asyncio.sleep(1.1)
    result = await sweep_once(conn, 5)  # batches of five until done
    assert (result.holds_expired, result.seats_released) == (12, 24)
    assert await conn.fetchval(
        "SELECT count(*) FROM seat_inventory WHERE event_id = $1 AND status <> 'AVAILABLE'",
        event_id) == 0
    assert await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1",
                               uuid.UUID(keeper["body"]["hold_id"])) == "HELD"
    assert await conn.fetchval("SELECT count(*) FROM hold_releases") == 24
    await audit_clean(conn)


async def test_sweep_never_touches_sold_seats(api: Api, conn: Any) -> None:
    """A seat sold under a hold (checkout's confirm step) is out of the sweeper's reach,
    even if the hold's deadline passes afterwards."""
    event_id = await api.create_event(seats=5, hold_ttl_seconds=1)
    account = await api.account(conn)
    body = (await _hold_in_db(conn, event_id, account, [1, 2]))["body"]
    hold_id = uuid.UUID(body["hold_id"])
    # Checkout's steps 1 and 3 (the provider's authorization applied as it
    # would be from its answer).
    begun = await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, 'pay', 'd', 'card_4242', 600, 0, 30)",
        hold_id, account)
    result = await conn.fetchval(
        "SELECT onsale_payment_apply($1, 'AUTHORIZED', 'pi_test', NULL, NULL, 'test', 5)",
        begun["operation_id"])
    assert result["order_status"] == "CONFIRMED"
    await asyncio.sleep(1.1)
    assert (await sweep_once(conn, 10)).seats_released == 0
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", hold_id) == 0
    assert await conn.fetchval(
        "SELECT count(*) FROM seat_inventory WHERE event_id = $1 AND status = 'SOLD'",
        event_id) == 2
    await audit_clean(conn)


async def test_idempotency_records_are_pruned_after_retention(api: Api, conn: Any) -> None:
    from onsale.core.sweeper import prune_idempotency

    event_id = await api.create_event(seats=20)
    for seat in range(1, 6):
        await _hold_in_db(conn, event_id, await api.account(conn), [seat])
    await conn.execute("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' "
                       "WHERE ctid IN (SELECT ctid FROM idempotency_keys LIMIT 3)")
    assert await prune_idempotency(conn, batch=2) == 3
    assert await conn.fetchval("SELECT count(*) FROM idempotency_keys") == 2


async def _expire(conn: Any, hold_id: uuid.UUID, ago: str) -> None:
    """Move a hold's deadline (and its seats', the same instant) ``ago`` into the past."""
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() - $2::text::interval "
                           "WHERE hold_id = $1", hold_id, ago)
        await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() - $2::text::interval "
                           "WHERE hold_id = $1", hold_id, ago)


async def _both_expired(api: Api, conn: Any) -> tuple[int, uuid.UUID, uuid.UUID]:
    """An old hold and the newer hold that reclaimed its seat 1, both past their
    deadline (the old one the earlier), neither swept yet: the case the expiry's
    ``hold_id`` fence exists for, where the deadline alone protects nothing."""
    event_id = await api.create_event(seats=5)
    alice, bob = await api.account(conn), await api.account(conn)
    old = await _hold_in_db(conn, event_id, alice, [1, 2])
    old_id = uuid.UUID(old["body"]["hold_id"])
    await _expire(conn, old_id, "2 s")
    new = await _hold_in_db(conn, event_id, bob, [1])
    assert new["status_code"] == 201, new
    new_id = uuid.UUID(new["body"]["hold_id"])
    await _expire(conn, new_id, "1 s")
    return event_id, old_id, new_id


async def _seat(conn: Any, event_id: int, seat_id: int) -> Any:
    return await conn.fetchrow("SELECT status, hold_id FROM seat_inventory "
                               "WHERE event_id = $1 AND seat_id = $2", event_id, seat_id)


async def test_a_late_expiry_of_an_old_hold_leaves_the_newer_expired_hold_alone(
        api: Api, conn: Any) -> None:
    """Without ``si.hold_id = p_hold_id`` in onsale_expire_hold, the old hold's late
    message would release seat 1 from the newer hold, in the old hold's name."""
    event_id, old_id, new_id = await _both_expired(api, conn)
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", old_id) == 1  # seat 2 only
    seat = await _seat(conn, event_id, 1)
    assert (seat["status"], seat["hold_id"]) == ("HELD", new_id)
    await audit_clean(conn)
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", new_id) == 1
    releases = {r["seat_id"]: r["hold_id"] for r in await conn.fetch(
        "SELECT seat_id, hold_id FROM hold_releases WHERE reason = 'expired' AND event_id = $1",
        event_id)}
    assert releases == {1: new_id, 2: old_id}
    await audit_clean(conn)


async def test_a_sweep_of_an_old_hold_leaves_the_newer_expired_hold_alone(
        api: Api, conn: Any) -> None:
    """A batch of one takes the oldest deadline first: the old hold. Without the
    ``si.hold_id`` fence in onsale_sweep it would release seat 1 from the newer hold."""
    event_id, old_id, new_id = await _both_expired(api, conn)
    first = await conn.fetchrow("SELECT * FROM onsale_sweep(1)")  # one batch of one
    assert (first["holds_expired"], first["seats_released"]) == (1, 1)  # the old hold, seat 2
    seat = await _seat(conn, event_id, 1)
    assert (seat["status"], seat["hold_id"]) == ("HELD", new_id)
    await audit_clean(conn)
    second = await conn.fetchrow("SELECT * FROM onsale_sweep(1)")
    assert (second["holds_expired"], second["seats_released"]) == (1, 1)  # the newer, seat 1
    releases = {r["seat_id"]: r["hold_id"] for r in await conn.fetch(
        "SELECT seat_id, hold_id FROM hold_releases WHERE reason = 'expired' AND event_id = $1",
        event_id)}
    assert releases == {1: new_id, 2: old_id}
    await audit_clean(conn)


@pytest.mark.parametrize(("offset", "released"), [("0", 2), ("1 microsecond", 0)])
@pytest.mark.parametrize("expiry", ["message", "sweep"])
async def test_an_expiry_at_the_exact_deadline_releases_and_not_before(
        api: Api, conn: Any, expiry: str, offset: str, released: int) -> None:
    """now() is fixed inside a transaction: at a deadline of exactly now() the hold is
    over (the claim predicate's boundary) and the late message or the sweep releases
    its seats; one microsecond before it, neither touches them."""
    event_id = await api.create_event(seats=5)
    hold_id = uuid.UUID((await _hold_in_db(conn, event_id, await api.account(conn), [1, 2]))
                        ["body"]["hold_id"])
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() + $2::text::interval "
                           "WHERE hold_id = $1", hold_id, offset)
        await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() + "
                           "$2::text::interval WHERE hold_id = $1", hold_id, offset)
        if expiry == "message":
            assert await conn.fetchval("SELECT onsale_expire_hold($1)", hold_id) == released
        else:
            swept = await conn.fetchrow("SELECT * FROM onsale_sweep(10)")
            assert (swept["holds_expired"], swept["seats_released"]) == (released // 2,
                                                                         released)
        status = await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1", hold_id)
        assert status == ("EXPIRED" if released else "HELD")
        seats = {r["status"] for r in await conn.fetch(
            "SELECT status FROM seat_inventory WHERE event_id = $1 AND seat_id IN (1, 2)",
            event_id)}
        assert seats == ({"AVAILABLE"} if released else {"HELD"})
    await audit_clean(conn)


async def test_a_sweep_skips_seats_a_shopper_has_locked_and_ends_their_hold_later(
        api: Api, conn: Any, db_url: str) -> None:
    """The sweep never waits for a shopper (SKIP LOCKED): a seat locked by another
    transaction (a hold attempt claiming it, say) stays HELD under its expired hold,
    so that hold is not ended yet (it still owns a seat: ``NOT EXISTS`` in the
    sweep's last step); a later sweep ends it. Ending it now would leave a HELD seat
    under an EXPIRED hold, which no sweep would ever pick up again."""
    event_id = await api.create_event(seats=5)
    pair = uuid.UUID((await _hold_in_db(conn, event_id, await api.account(conn), [1, 2]))
                     ["body"]["hold_id"])
    single = uuid.UUID((await _hold_in_db(conn, event_id, await api.account(conn), [3]))
                       ["body"]["hold_id"])
    await _expire(conn, pair, "2 s")
    await _expire(conn, single, "1 s")
    async with asyncpg_connect(db_url) as shopper:
        locking = shopper.transaction()
        await locking.start()
        await shopper.execute("SELECT 1 FROM seat_inventory WHERE event_id = $1 "
                              "AND seat_id IN (2, 3) FOR UPDATE", event_id)
        await conn.execute("SET lock_timeout = '2s'")  # it must not wait: fail, not hang
        first = await conn.fetchrow("SELECT * FROM onsale_sweep(10)")
        await conn.execute("RESET lock_timeout")
        assert (first["holds_expired"], first["seats_released"]) == (0, 1)  # seat 1
        statuses = {r["hold_id"]: r["status"] for r in await conn.fetch(
            "SELECT hold_id, status FROM holds WHERE event_id = $1", event_id)}
        assert statuses == {pair: "HELD", single: "HELD"}
        assert [(s["status"], s["hold_id"]) for s in
                [await _seat(conn, event_id, n) for n in (1, 2, 3)]] == \
            [("AVAILABLE", None), ("HELD", pair), ("HELD", single)]
        await locking.rollback()
    await audit_clean(conn)
    second = await conn.fetchrow("SELECT * FROM onsale_sweep(10)")
    assert (second["holds_expired"], second["seats_released"]) == (2, 2)
    assert await conn.fetchval("SELECT count(*) FROM holds WHERE event_id = $1 "
                               "AND status = 'EXPIRED'", event_id) == 2
    await audit_clean(conn)
