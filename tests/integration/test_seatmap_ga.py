"""General-admission places on the live seat map: the stripes' available counts ride in
the same snapshot and delta stream as the seats, from logical decoding of ga_buckets,
and a client ends with exactly the database's places (docs/seatmap-protocol.md)."""

from __future__ import annotations

from typing import Any

import redis.asyncio

from onsale.embedded import EmbeddedValkey
from onsale.seatmap.sequencer import SequenceError
from tests.integration.test_seatmap_ws import seatmap_stack
from tests.seatmap_support import (
    SET_HELD,
    Viewer,
    create_event,
    db_map,
    same_seats,
    seatmap_settings,
)
from tests.stack import eventually

TAKE = ("UPDATE ga_buckets SET available = available - $3, held = held + $3, "
        "version = version + 1 WHERE event_id = $1 AND tier_id = 1 AND stripe = $2")


async def redis_has_db_state(r: redis.asyncio.Redis, conn: Any, event_id: int) -> bool:
    from onsale.seatmap.bus import Bus

    try:
        found = await Bus(r).load_state(event_id)
    except SequenceError:
        return False
    return found is not None and same_seats(found, await db_map(conn, event_id))


async def test_a_client_sees_places_left_change_live(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 20, ga=((100, 4), (7, 1)))
    async with seatmap_stack(db_url, valkey, seatmap_settings()) as (address, _):
        await eventually(lambda: redis_has_db_state(redis_client, conn, event_id))
        async with Viewer(address, event_id) as viewer:
            async def got_snapshot() -> bool:
                return viewer.state is not None
            await eventually(got_snapshot)
            assert viewer.state is not None
            assert viewer.state.places_left() == {1: 100, 2: 7}
            assert viewer.state.places[(1, 0)] == 25
            # A hold of 3 on stripe 2 and a seat held in one transaction, then 4 more
            # places alone: deltas carry the stripes that changed, with the seats.
            async with conn.transaction():
                await conn.execute(TAKE, event_id, 2, 3)
                await conn.execute(SET_HELD, event_id, [5], 1_900_000_000.0)
            await conn.execute(TAKE, event_id, 0, 4)

            async def caught_up() -> bool:
                return (viewer.state is not None
                        and same_seats(viewer.state, await db_map(conn, event_id)))
            await eventually(caught_up)
        assert viewer.state is not None and viewer.broken == []
        assert viewer.state.places_left() == {1: 93, 2: 7}
        assert viewer.kinds[0] == "snapshot" and "delta" in viewer.kinds


async def test_a_ga_only_event_is_on_the_map_and_survives_a_resume(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    async with seatmap_stack(db_url, valkey, seatmap_settings()) as (address, _):
        # Created while change capture runs: a new event from its inserts alone.
        event_id = await create_event(conn, 0, name="festival", ga=((10, 2),))
        await eventually(lambda: redis_has_db_state(redis_client, conn, event_id))
        async with Viewer(address, event_id) as first:
            async def ready() -> bool:
                return first.state is not None
            await eventually(ready)
        assert first.state is not None and first.state.seat_count == 0
        assert first.state.places_left() == {1: 10}
        await conn.execute(TAKE, event_id, 1, 5)
        async with Viewer(address, event_id, since=first.version, state=first.state) as again:
            async def at_db() -> bool:
                return (again.state is not None
                        and same_seats(again.state, await db_map(conn, event_id)))
            await eventually(at_db)
        assert again.kinds[0] == "delta"  # resumed with the missing delta, not a snapshot
        assert again.state is not None and again.state.places_left() == {1: 5}
