"""onsale_ga_take called directly, with a decoy beside the tier it takes from: another
event with the same tier number, another tier of the same event, an empty stripe, a
retired stripe (docs/invariants.md#mutation-testing). The hold id is chosen so that it
hashes to the stripe a case needs, as the function computes it."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg

from tests.conftest import Api

TAKE = ("SELECT taken, remaining, spread"
        " FROM onsale_ga_take($1, $2::smallint, $3, $4, $5::smallint, $6)")


def tier(name: str, stripes: int, capacity: int) -> dict[str, Any]:
    return {"name": name, "price_minor": 1000, "capacity": capacity, "stripes": stripes,
            "max_per_hold": 10}


async def hold_id_for(conn: Any, tier_id: int, stripes: int, stripe: int) -> uuid.UUID:
    """A hold id that onsale_ga_take's hash sends to ``stripe``."""
    for _ in range(1000):
        candidate = uuid.uuid4()
        got = await conn.fetchval(
            "SELECT ((hashtextextended($1::text, $2) & 9223372036854775807) % $3)::int",
            str(candidate), tier_id, stripes)
        if got == stripe:
            return candidate
    raise AssertionError("no hold id hashes there")


async def set_stripes(conn: Any, event_id: int, tier_id: int, available: list[int]) -> None:
    """The tier's stripes with these places available (the rest counted as sold)."""
    for stripe, places in enumerate(available):
        await conn.execute(
            "UPDATE ga_buckets SET sold = available + held + sold - $4, available = $4, held = 0"
            " WHERE event_id = $1 AND tier_id = $2 AND stripe = $3",
            event_id, tier_id, stripe, places)


async def available(conn: Any, event_id: int, tier_id: int) -> list[int]:
    rows = await conn.fetch("SELECT available FROM ga_buckets WHERE event_id = $1 AND "
                            "tier_id = $2 ORDER BY stripe", event_id, tier_id)
    return [r["available"] for r in rows]


async def take(conn: Any, event_id: int, tier_id: int, hold: uuid.UUID, quantity: int,
               stripes: int, spread: bool) -> tuple[list[dict[str, int]] | None, int | None]:
    row = await conn.fetchrow(TAKE, event_id, tier_id, hold, quantity, stripes, spread)
    taken = json.loads(row["taken"]) if isinstance(row["taken"], str) else row["taken"]
    return taken, row["remaining"]


async def events(api: Api, conn: Any, *tiers: dict[str, Any]) -> tuple[int, int]:
    """Our event and a decoy event with the same tiers (so the same tier numbers)."""
    ours = await api.create_event(seats=10, ga_tiers=list(tiers))
    decoy = await api.create_event(seats=10, ga_tiers=list(tiers))
    return ours, decoy


async def test_the_one_stripe_path_takes_from_the_hashed_stripe_only(
        api: Api, conn: Any) -> None:
    ours, _ = await events(api, conn, tier("Floor", 4, 40))
    hold = await hold_id_for(conn, 1, 4, 2)
    taken, _ = await take(conn, ours, 1, hold, 3, 4, False)
    assert taken == [{"stripe": 2, "quantity": 3}]
    assert await available(conn, ours, 1) == [10, 10, 7, 10]


async def test_a_short_tier_is_short_whatever_its_neighbours_hold(api: Api, conn: Any) -> None:
    ours, decoy = await events(api, conn, tier("Floor", 2, 20), tier("Balcony", 2, 20))
    await set_stripes(conn, ours, 1, [1, 1])
    hold = await hold_id_for(conn, 1, 2, 0)
    taken, remaining = await take(conn, ours, 1, hold, 3, 2, True)
    assert (taken, remaining) == (None, 2)  # not the decoys' places, and no guard error
    assert await available(conn, ours, 1) == [1, 1]
    assert await available(conn, decoy, 1) == [10, 10]
    assert await available(conn, ours, 2) == [10, 10]


async def test_the_spread_takes_from_its_own_tiers_stripes_only(api: Api, conn: Any) -> None:
    ours, decoy = await events(api, conn, tier("Floor", 2, 20), tier("Balcony", 2, 20))
    await set_stripes(conn, ours, 1, [2, 2])
    hold = await hold_id_for(conn, 1, 2, 0)
    taken, remaining = await take(conn, ours, 1, hold, 3, 2, True)
    assert taken == [{"stripe": 0, "quantity": 2}, {"stripe": 1, "quantity": 1}]
    assert remaining is None
    assert await available(conn, ours, 1) == [0, 1]
    assert await available(conn, decoy, 1) == [10, 10]
    assert await available(conn, ours, 2) == [10, 10]


async def test_an_empty_stripe_is_passed_over(api: Api, conn: Any) -> None:
    ours, _ = await events(api, conn, tier("Floor", 3, 30))
    await set_stripes(conn, ours, 1, [0, 2, 2])
    hold = await hold_id_for(conn, 1, 3, 0)  # starts at the empty stripe
    taken, _ = await take(conn, ours, 1, hold, 3, 3, True)
    assert taken == [{"stripe": 1, "quantity": 2}, {"stripe": 2, "quantity": 1}]


async def test_a_retired_stripe_is_taken_from_after_every_active_one(
        api: Api, conn: Any) -> None:
    ours, _ = await events(api, conn, tier("Floor", 3, 30))
    await set_stripes(conn, ours, 1, [5, 1, 5])
    hold = await hold_id_for(conn, 1, 2, 1)  # two active stripes: stripe 2 is retired
    taken, _ = await take(conn, ours, 1, hold, 3, 2, True)
    assert taken == [{"stripe": 1, "quantity": 1}, {"stripe": 0, "quantity": 2}]


async def test_the_spread_locks_its_own_tier_only(api: Api, conn: Any, db_url: str) -> None:
    """Another tier of the event, or the same tier of another event, locked elsewhere
    (a hold or a rebalance in flight there) does not make this take wait."""
    ours, decoy = await events(api, conn, tier("Floor", 2, 20), tier("Balcony", 2, 20))
    other = await asyncpg.connect(db_url)
    try:
        for event_id, tier_id in ((ours, 2), (decoy, 1)):
            await set_stripes(conn, ours, 1, [2, 2])
            async with other.transaction():
                await other.execute("SELECT 1 FROM ga_buckets WHERE event_id = $1 AND "
                                    "tier_id = $2 FOR UPDATE", event_id, tier_id)
                async with conn.transaction():
                    await conn.execute("SET LOCAL lock_timeout = '3s'")
                    hold = await hold_id_for(conn, 1, 2, 0)
                    taken, _ = await take(conn, ours, 1, hold, 3, 2, True)
                    assert sum(t["quantity"] for t in taken or []) == 3
    finally:
        await other.close()
