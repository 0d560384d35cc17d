"""onsale_hold called directly, on the paths every other test missed
(docs/invariants.md#mutation-testing): the bounds of a seat list, unknown seats beside a
decoy event with more seats, one key used by two accounts and two keys of one account,
and a seat taken by another transaction while this one waits for its lock."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import asyncpg
import pytest

from tests.conftest import Api

HOLD = "SELECT status_code, body FROM onsale_hold($1, $2, $3, $4, $5)"


async def hold(conn: Any, event_id: int, account: uuid.UUID, seats: list[int],
               key: str | None = None, digest: str = "d") -> tuple[int, dict[str, Any]]:
    row = await conn.fetchrow(HOLD, event_id, account, key or uuid.uuid4().hex, digest, seats)
    body = row["body"]
    return row["status_code"], json.loads(body) if isinstance(body, str) else body


async def test_a_seat_list_is_refused_when_empty_and_taken_at_its_maximum(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20, max_seats_per_hold=4,
                                      max_tickets_per_account=10)
    account = await api.account(conn)
    with pytest.raises(asyncpg.PostgresError) as empty:
        await hold(conn, event_id, account, [])
    assert empty.value.sqlstate == "OS400" and str(empty.value).startswith("invalid_seats")
    status, body = await hold(conn, event_id, account, [1, 2, 3, 4])  # exactly the maximum
    assert status == 201 and len(body["seats"]) == 4
    with pytest.raises(asyncpg.PostgresError) as over:
        await hold(conn, event_id, account, [5, 6, 7, 8, 9])
    assert over.value.sqlstate == "OS400"


async def test_unknown_seats_are_named_by_this_events_seats(api: Api, conn: Any) -> None:
    await api.create_event(seats=40)  # a decoy event where seat 30 exists
    event_id = await api.create_event(seats=20)
    with pytest.raises(asyncpg.PostgresError) as unknown:
        await hold(conn, event_id, await api.account(conn), [3, 30])
    assert json.loads(unknown.value.detail or "{}") == {"unknown_seat_ids": [30]}


async def test_a_key_is_the_accounts_own(api: Api, conn: Any) -> None:
    """Another account's key with the same text and body is not a replay for this one,
    and this account's earlier key is not this request's."""
    event_id = await api.create_event(seats=20, max_tickets_per_account=10)
    alice, bob = await api.account(conn), await api.account(conn)
    assert (await hold(conn, event_id, alice, [1, 2], key="same-key"))[0] == 201
    status, body = await hold(conn, event_id, bob, [1, 2], key="same-key")
    assert (status, body["code"]) == (409, "seats_unavailable")  # not alice's hold
    assert (await hold(conn, event_id, bob, [5], key="bob-1", digest="d1"))[0] == 201
    status, body = await hold(conn, event_id, bob, [1], key="bob-2", digest="d2")
    assert (status, body["code"]) == (409, "seats_unavailable")  # not bob-1's conflict


async def _blocked(watch: Any) -> bool:
    return bool(await watch.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND query LIKE '%onsale_hold(%'"))


@pytest.mark.parametrize("taken_as", ["held", "sold"])
async def test_a_seat_taken_while_the_hold_waits_for_its_lock_is_refused(
        api: Api, conn: Any, db_url: str, taken_as: str) -> None:
    """The seat looks free to the unlocked read; another transaction takes it (a live
    hold, or a sale) and commits while this hold waits for the row lock: 409."""
    event_id = await api.create_event(seats=20, max_tickets_per_account=10)
    other, watch = await asyncpg.connect(db_url), await asyncpg.connect(db_url)
    try:
        tx = other.transaction()
        await tx.start()
        if taken_as == "held":
            assert (await hold(other, event_id, await api.account(conn), [7]))[0] == 201
        else:
            await other.execute(
                "UPDATE seat_inventory SET status = 'SOLD', order_id = gen_random_uuid()"
                " WHERE event_id = $1 AND seat_id = 7", event_id)
        waiting = asyncio.create_task(hold(conn, event_id, await api.account(watch), [7, 8]))
        for _ in range(200):
            if await _blocked(watch):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the hold never waited for the seat's lock")
        await tx.commit()
        status, body = await waiting
        assert (status, body["code"], body["unavailable_seat_ids"]) == (
            409, "seats_unavailable", [7])
        assert await conn.fetchval("SELECT status FROM seat_inventory WHERE event_id = $1 "
                                   "AND seat_id = 8", event_id) == "AVAILABLE"
    finally:
        await other.close()
        await watch.close()
