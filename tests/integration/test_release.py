"""onsale_release, a hold released by its owner (issue 22, part 5): only the hold it
names, only the seats still held under its id (a hold past its deadline may have lost a
seat to a newer hold), ended as EXPIRED from its exact deadline on, and never a hold in
payment or sold. Each case kills a plausible one-line slip that every other test let
through (scripts/mutants.py); each ends with the audit."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import pytest

from tests.conftest import Api, audit_clean
from tests.integration.test_ga_holds import floor, ga_event


async def _hold(conn: Any, event_id: int, account: uuid.UUID, seats: list[int]) -> uuid.UUID:
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, $3, 'd', $4)",
                              event_id, account, uuid.uuid4().hex, seats)
    assert row["status_code"] == 201, dict(row)
    return uuid.UUID(row["body"]["hold_id"])


async def _release(conn: Any, hold_id: uuid.UUID, account: uuid.UUID) -> str:
    await conn.fetchval("SELECT onsale_release($1, $2)", hold_id, account)
    status: str = await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1", hold_id)
    return status


async def _seats(conn: Any, event_id: int) -> dict[int, tuple[str, uuid.UUID | None]]:
    rows = await conn.fetch("SELECT seat_id, status, hold_id FROM seat_inventory "
                            "WHERE event_id = $1 ORDER BY seat_id", event_id)
    return {r["seat_id"]: (r["status"], r["hold_id"]) for r in rows}


async def test_releasing_one_hold_leaves_the_accounts_other_holds(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=3)
    me = await api.account(conn)
    first = await _hold(conn, event_id, me, [1])
    second = await _hold(conn, event_id, me, [2])
    assert await _release(conn, second, me) == "RELEASED"
    assert await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1", first) == "HELD"
    assert await _seats(conn, event_id) == {1: ("HELD", first), 2: ("AVAILABLE", None),
                                            3: ("AVAILABLE", None)}
    await audit_clean(conn)


async def test_releasing_an_old_hold_leaves_the_seat_a_newer_hold_reclaimed(
        api: Api, conn: Any) -> None:
    """Past its deadline, not swept yet, the old hold lost seat 1 to a newer hold; its
    owner releases it now: only seat 2, still held under its id, goes (as expired)."""
    event_id = await api.create_event(seats=3)
    me, other = await api.account(conn), await api.account(conn)
    old = await _hold(conn, event_id, me, [1, 2])
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() - interval '1 second' "
                           "WHERE hold_id = $1", old)
        await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() - "
                           "interval '1 second' WHERE hold_id = $1", old)
    newer = await _hold(conn, event_id, other, [1])
    assert await _release(conn, old, me) == "EXPIRED"
    assert await _seats(conn, event_id) == {1: ("HELD", newer), 2: ("AVAILABLE", None),
                                            3: ("AVAILABLE", None)}
    reasons = {r["seat_id"]: (r["hold_id"], r["reason"]) for r in await conn.fetch(
        "SELECT seat_id, hold_id, reason FROM hold_releases WHERE event_id = $1", event_id)}
    assert reasons == {1: (old, "reclaimed"), 2: (old, "expired")}
    await audit_clean(conn)


async def test_releasing_an_old_ga_hold_returns_only_its_own_places(
        api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=10, stripes=1), seats=0,
                              max_tickets_per_account=10)
    me, other = await api.account(conn), await api.account(conn)
    holds = []
    for account, quantity in ((me, 2), (other, 3)):
        row = await conn.fetchrow(
            "SELECT * FROM onsale_ga_hold($1, $2, $3, 'd', 1::smallint, $4, false)",
            event_id, account, uuid.uuid4().hex, quantity)
        holds.append(uuid.UUID(row["body"]["hold_id"]))
    await conn.execute("UPDATE holds SET expires_at = now() - interval '1 second' "
                       "WHERE hold_id = ANY ($1)", holds)
    assert await _release(conn, holds[0], me) == "EXPIRED"
    row = await conn.fetchrow("SELECT available, held FROM ga_buckets WHERE event_id = $1",
                              event_id)
    assert (row["available"], row["held"]) == (7, 3)
    assert await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1", holds[1]) == "HELD"
    await audit_clean(conn)


@pytest.mark.parametrize(("offset", "ends"), [("0", "EXPIRED"), ("1 microsecond", "RELEASED")])
async def test_a_hold_released_at_its_exact_deadline_ends_as_expired(
        api: Api, conn: Any, offset: str, ends: str) -> None:
    """now() is fixed inside a transaction: from a deadline of exactly now() on, the
    hold is over (the claim predicate's boundary) and ends as EXPIRED, whoever gets to
    it first; before it, the owner's release ends it as RELEASED."""
    event_id = await api.create_event(seats=3)
    me = await api.account(conn)
    hold_id = await _hold(conn, event_id, me, [1, 2])
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() + $2::text::interval "
                           "WHERE hold_id = $1", hold_id, offset)
        await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() + "
                           "$2::text::interval WHERE hold_id = $1", hold_id, offset)
        assert await _release(conn, hold_id, me) == ends
    reasons = {r["reason"] for r in await conn.fetch(
        "SELECT reason FROM hold_releases WHERE hold_id = $1", hold_id)}
    assert reasons == {ends.lower()}
    await audit_clean(conn)


async def test_a_hold_in_payment_or_sold_is_not_releasable(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=3)
    me = await api.account(conn)
    hold_id = await _hold(conn, event_id, me, [1])
    begun = await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, 'pay', 'd', 'card_4242', 600, 0, 30)",
        hold_id, me)
    for status in ("PAYMENT_PENDING", "CONFIRMED"):
        if status == "CONFIRMED":
            sold = await conn.fetchval(
                "SELECT onsale_payment_apply($1, 'AUTHORIZED', 'pi_1', NULL, NULL, 'test', 5)",
                begun["operation_id"])
            assert sold["order_status"] == "CONFIRMED"
        with pytest.raises(asyncpg.PostgresError) as caught:
            await conn.fetchval("SELECT onsale_release($1, $2)", hold_id, me)
        exc: Any = caught.value
        assert (exc.sqlstate, exc.args[0], json.loads(exc.detail)) == \
            ("OS409", "hold_not_releasable", {"status": status})
    assert (await _seats(conn, event_id))[1] == ("SOLD", hold_id)
    await audit_clean(conn)
