"""onsale_checkout_begin called directly, on the paths every other test missed
(docs/invariants.md#mutation-testing): another account's hold, one key text used by two
accounts, a replay beside other orders, the ticket limit counted at checkout after the
event's limit was lowered, and a newer price version for later sales."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import pytest

from tests.conftest import Api

BEGIN = ("SELECT * FROM onsale_checkout_begin($1, $2, $3, 'd', 'card_4242', 600, 0, 30)")


async def hold(conn: Any, event_id: int, account: uuid.UUID, seats: list[int]) -> uuid.UUID:
    row = await conn.fetchrow("SELECT status_code, body FROM onsale_hold($1, $2, $3, 'd', $4)",
                              event_id, account, uuid.uuid4().hex, seats)
    assert row["status_code"] == 201, row["body"]
    body = row["body"] if isinstance(row["body"], dict) else json.loads(row["body"])
    return uuid.UUID(body["hold_id"])


async def begin(conn: Any, hold_id: uuid.UUID, account: uuid.UUID,
                key: str | None = None) -> Any:
    return await conn.fetchrow(BEGIN, hold_id, account, key or uuid.uuid4().hex)


async def test_another_accounts_hold_is_not_found(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10)
    alice, mallory = await api.account(conn), await api.account(conn)
    hold_id = await hold(conn, event_id, alice, [1, 2])
    with pytest.raises(asyncpg.PostgresError) as refused:
        await begin(conn, hold_id, mallory)
    assert refused.value.sqlstate == "OS404" and str(refused.value).startswith(
        "hold_not_found")
    assert await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1", hold_id) == "HELD"


async def test_a_key_and_its_replay_are_the_accounts_own(api: Api, conn: Any) -> None:
    cheap = await api.create_event(seats=10, price_tiers=[{"name": "A", "price_minor": 1000}])
    dear = await api.create_event(seats=10, price_tiers=[{"name": "B", "price_minor": 9000}])
    alice, bob = await api.account(conn), await api.account(conn)
    first = await begin(conn, await hold(conn, cheap, alice, [1]), alice, key="same-key")
    bobs_hold = await hold(conn, dear, bob, [1, 2])
    second = await begin(conn, bobs_hold, bob, key="same-key")
    assert not second["replayed"] and second["order_id"] != first["order_id"]
    assert second["amount_minor"] == 18_000
    again = await begin(conn, bobs_hold, bob, key="same-key")  # bob's replay: bob's order
    assert again["replayed"] and again["order_id"] == second["order_id"]
    assert again["amount_minor"] == 18_000 and again["currency"] == "USD"


async def test_the_limit_at_checkout_counts_this_accounts_holds_in_this_event(
        api: Api, conn: Any) -> None:
    """The event's limit lowered to 3 after holds were made: this account's bought hold (2)
    and the hold being paid (2) are 4, over it; another event's and another account's
    holds are not counted."""
    event_id = await api.create_event(seats=20, max_tickets_per_account=10)
    decoy = await api.create_event(seats=20, max_tickets_per_account=10)
    alice, bob = await api.account(conn), await api.account(conn)
    bought = await hold(conn, event_id, alice, [1, 2])
    await conn.execute("UPDATE holds SET status = 'CONFIRMED' WHERE hold_id = $1", bought)
    paying = await hold(conn, event_id, alice, [3, 4])
    await conn.execute("UPDATE events SET max_tickets_per_account = 3 WHERE event_id = $1",
                       event_id)
    with pytest.raises(asyncpg.PostgresError) as over:
        await begin(conn, paying, alice)
    assert json.loads(over.value.detail or "{}") == {"limit": 3, "owned": 4, "requested": 0}
    # Raised to 4: exactly the limit is allowed, whatever alice holds elsewhere or bob here.
    await hold(conn, decoy, alice, [1, 2, 3])
    await hold(conn, event_id, bob, [5, 6, 7])
    await conn.execute("UPDATE events SET max_tickets_per_account = 4 WHERE event_id = $1",
                       event_id)
    assert (await begin(conn, paying, alice))["amount_minor"] > 0


async def test_a_hold_is_paid_at_the_price_version_its_seats_carry(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10,
                                      price_tiers=[{"name": "Stalls", "price_minor": 5000}])
    account = await api.account(conn)
    hold_id = await hold(conn, event_id, account, [4, 5])
    await conn.execute(  # a newer price for later sales: these seats keep the first
        "INSERT INTO price_tiers (event_id, tier_id, price_version, name, price_minor) "
        "SELECT event_id, tier_id, price_version + 1, name, price_minor * 2 "
        "FROM price_tiers WHERE event_id = $1", event_id)
    assert (await begin(conn, hold_id, account))["amount_minor"] == 10_000
