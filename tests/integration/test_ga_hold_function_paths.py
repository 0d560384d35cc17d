"""onsale_ga_hold called directly, on the paths every other test missed
(docs/invariants.md#mutation-testing): the sale opening at exactly its time, a decoy
event whose tier has the same number, a zero quantity, and a tier's per-account limit
counted over this account's holds of this tier of this event only, in each state."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import pytest

from tests.conftest import Api

GA_HOLD = ("SELECT status_code, body FROM onsale_ga_hold($1, $2, $3, 'd', $4::smallint, $5,"
           " $6)")


async def ga_hold(conn: Any, event_id: int, account: uuid.UUID, quantity: int,
                  tier_id: int = 1) -> tuple[int, dict[str, Any]]:
    """As core/hold_store.py runs it: the one-stripe try, then the spread."""
    for spread in (False, True):
        row = await conn.fetchrow(GA_HOLD, event_id, account, uuid.uuid4().hex, tier_id,
                                  quantity, spread)
        if row["status_code"] != 0:
            body = row["body"]
            return row["status_code"], json.loads(body) if isinstance(body, str) else body
    raise AssertionError("the spread answered 0")


def tier(name: str, price: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "price_minor": price, "capacity": 100, "stripes": 2,
            "max_per_hold": 6, **extra}


async def test_the_sale_opens_at_exactly_its_time(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000)])
    account = await api.account(conn)
    async with conn.transaction():  # now() is the transaction's
        await conn.execute("UPDATE events SET onsale_at = now() WHERE event_id = $1", event_id)
        assert (await ga_hold(conn, event_id, account, 1))[0] == 201


async def test_a_hold_is_of_this_events_tier(api: Api, conn: Any) -> None:
    await api.create_event(seats=0, ga_tiers=[tier("Decoy", 7000, max_per_hold=1)])
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000)])
    status, body = await ga_hold(conn, event_id, await api.account(conn), 3)
    assert status == 201, body
    assert body["status"] == "HELD" and body["amount_minor"] == 15_000
    assert body["ga"] == {"tier_id": 1, "name": "Floor", "quantity": 3, "price_minor": 5000}
    with pytest.raises(asyncpg.PostgresError) as none:
        await ga_hold(conn, event_id, await api.account(conn), 0)
    assert none.value.sqlstate == "OS400" and str(none.value).startswith("invalid_quantity")


async def test_a_tiers_account_limit_counts_this_accounts_live_holds_of_it(
        api: Api, conn: Any) -> None:
    tiers = [tier("Floor", 5000, max_per_account=4), tier("Balcony", 3000, max_per_account=4)]
    decoy = await api.create_event(seats=0, ga_tiers=tiers, max_tickets_per_account=50)
    event_id = await api.create_event(seats=0, ga_tiers=tiers, max_tickets_per_account=50)
    alice, bob = await api.account(conn), await api.account(conn)
    assert (await ga_hold(conn, decoy, alice, 3))[0] == 201  # another event
    assert (await ga_hold(conn, event_id, alice, 3, tier_id=2))[0] == 201  # another tier
    assert (await ga_hold(conn, event_id, bob, 3))[0] == 201  # another account

    async def alices(quantity: int, status: str, expired: bool = False) -> None:
        code, body = await ga_hold(conn, event_id, alice, quantity)
        assert code == 201, body
        deadline = "now() - interval '1 minute'" if expired else "expires_at"
        await conn.execute(f"UPDATE holds SET status = $2, expires_at = {deadline} "
                           "WHERE hold_id = $1", uuid.UUID(body["hold_id"]), status)

    await alices(2, "HELD", expired=True)  # past its deadline: not counted
    await alices(2, "RELEASED")  # given back before its deadline: not counted
    await alices(1, "CONFIRMED")
    await alices(1, "PAYMENT_PENDING")
    await alices(1, "HELD")
    status, _ = await ga_hold(conn, event_id, alice, 1)  # 3 live + 1: exactly the limit
    assert status == 201
    with pytest.raises(asyncpg.PostgresError) as over:
        await ga_hold(conn, event_id, alice, 1)
    assert json.loads(over.value.detail or "{}") == {"limit": 4, "owned": 4, "requested": 1,
                                                     "tier_id": 1}


async def test_a_hold_at_exactly_its_deadline_no_longer_counts(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000, max_per_account=2)],
                                      max_tickets_per_account=50)
    account = await api.account(conn)
    status, body = await ga_hold(conn, event_id, account, 2)
    assert status == 201
    async with conn.transaction():  # now() is the transaction's: the deadline is now
        await conn.execute("UPDATE holds SET expires_at = now() WHERE hold_id = $1",
                           uuid.UUID(body["hold_id"]))
        assert (await ga_hold(conn, event_id, account, 2))[0] == 201
