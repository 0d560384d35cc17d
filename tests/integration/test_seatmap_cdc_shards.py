"""Change capture per shard (docs/seatmap.md#one-consumer-per-shard), on real servers: a
consumer per shard, each on its own slot and its own keys in Valkey, all into the same
per-event streams; a shard added later gets its consumer; a shard whose server stops
stops only its own consumer, which resumes when the server is back; an event that
moves is published by its new shard's consumer alone."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import asyncpg
import pytest
import redis.asyncio

from onsale.core.shard_directory import add_shard
from onsale.embedded import EmbeddedPostgres, EmbeddedValkey, start_postgres
from onsale.kernel.db import init_connection
from onsale.kernel.placement import Placement
from onsale.seatmap.bus import Bus, capture_keys
from onsale.seatmap.capture import Capture
from onsale.seatmap.hub import Hub
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.shard_plan import slot_name
from tests.conftest import TwoShards, asyncpg_connect
from tests.seatmap_support import (
    Writer,
    assert_chain,
    consumer,
    create_event,
    db_map,
    drop_slot,
    entries,
    redis_map,
    same_seats,
    seatmap_settings,
)
from tests.stack import eventually


async def place(directory: Any, shard: Any, shard_id: int, seats: int) -> int:
    """An event on ``shard`` under an id the directory allocates, its catalogue row in
    the directory, and its placement (what `onsale event create --shard N` leaves)."""
    if shard_id == 1:
        event_id = await create_event(directory, seats)
    else:
        event_id = int(await directory.fetchval(
            "SELECT nextval(pg_get_serial_sequence('events', 'event_id'))"))
        await directory.execute(
            """INSERT INTO events (event_id, name, starts_at, onsale_at, hold_ttl_seconds,
                   max_tickets_per_account, max_seats_per_hold, seat_count)
               OVERRIDING SYSTEM VALUE
               VALUES ($1, 'elsewhere', now() + interval '1 day', now(), 300, 6, 6, $2)""",
            event_id, seats)
        await create_event(shard, seats, event_id=event_id)
    await directory.execute(
        "INSERT INTO event_placement (event_id, shard_id) VALUES ($1, $2)", event_id, shard_id)
    return event_id


async def caught_up(conn: Any, r: redis.asyncio.Redis, event_id: int) -> bool:
    found = await redis_map(r, event_id)
    return found is not None and same_seats(found, await db_map(conn, event_id))


async def slots(url: str) -> set[str]:
    async with asyncpg_connect(url) as conn:
        return {r["slot_name"] for r in await conn.fetch(
            "SELECT slot_name FROM pg_replication_slots WHERE database = current_database()")}


@contextlib.asynccontextmanager
async def capturing(directory: str, shards: dict[int, str], valkey: EmbeddedValkey,
                    settings: Any) -> AsyncIterator[Capture]:
    """Every shard's consumer (``running_capture``); the slots of the shards past the
    directory's are dropped afterwards too."""
    try:
        async with consumer(directory, valkey.url, settings) as capture:
            yield cast(Capture, capture)
    finally:
        for shard_id, url in shards.items():
            with contextlib.suppress(OSError, asyncpg.PostgresError):
                await drop_slot(url, slot_name(settings.slot, shard_id))


async def test_each_shards_events_reach_their_streams_through_their_own_slot(
        two_shards: TwoShards, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    settings = seatmap_settings()
    async with asyncpg_connect(two_shards.directory) as d, \
            asyncpg_connect(two_shards.shard2) as s2:
        one, two = await place(d, d, 1, 120), await place(d, s2, 2, 80)
        writers = [(d, Writer(one, 120)), (s2, Writer(two, 80))]
        async with capturing(two_shards.directory, {2: two_shards.shard2}, valkey,
                             settings) as capture:
            await eventually(lambda: caught_up(d, redis_client, one))
            await eventually(lambda: caught_up(s2, redis_client, two))
            for _, writer in writers:
                writer.expected.clear()
            for _ in range(40):
                for conn, writer in writers:
                    await writer.step(conn)
            await eventually(lambda: caught_up(d, redis_client, one))
            await eventually(lambda: caught_up(s2, redis_client, two))
            assert sorted(capture.running) == [1, 2]
            assert await slots(two_shards.directory) == {settings.slot}
            assert await slots(two_shards.shard2) == {f"{settings.slot}_s2"}
            # Each shard's consumer keeps its own meta and event list.
            first, second = Bus(redis_client, keys=capture_keys(1)), Bus(
                redis_client, keys=capture_keys(2))
            assert (await first.meta())["slot"] == settings.slot
            assert (await second.meta())["slot"] == f"{settings.slot}_s2"
            assert (await first.events(), await second.events()) == ({one}, {two})
            assert await redis_client.exists(capture_keys(1).alive, capture_keys(2).alive) == 2
        for (_, writer), event_id in zip(writers, (one, two), strict=True):
            found = await entries(redis_client, event_id)
            assert_chain(found)
            # Every transaction of its shard, in order, once.
            assert [e.changes for e in found if e.kind == "delta"] == writer.expected


@pytest.fixture
async def own_server() -> AsyncIterator[EmbeddedPostgres]:
    """A server of this test's own, which it stops and starts again."""
    base = Path(tempfile.mkdtemp(prefix="onsale-test-cdc-shard-"))
    server = start_postgres(base / "data", fast=True)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


async def _connect(url: str) -> Any:
    c = await asyncpg.connect(url)
    await init_connection(c)
    return c


async def test_a_shard_added_later_is_captured_and_one_down_stops_only_its_own(
        db_url: str, own_server: EmbeddedPostgres, valkey: EmbeddedValkey,
        redis_client: redis.asyncio.Redis) -> None:
    settings = seatmap_settings(shard_reload_s=1)
    admin = await asyncpg.connect(own_server.url)
    await admin.execute("CREATE DATABASE shard")
    await admin.close()
    dsn = own_server.url_for("shard")
    async with asyncpg_connect(db_url) as d, \
            capturing(db_url, {2: dsn}, valkey, settings) as capture:
        up = await place(d, d, 1, 60)
        await eventually(lambda: caught_up(d, redis_client, up))
        assert sorted(capture.running) == [1]
        await add_shard(d, dsn, _connect)  # notifies nothing: found by the reload

        async def shard_2_streams() -> bool:
            return 2 in capture.running and capture.consumer(2).active
        await eventually(shard_2_streams)
        async with asyncpg_connect(dsn) as s2:
            down = await place(d, s2, 2, 60)
            await eventually(lambda: caught_up(s2, redis_client, down))
        generation = (await Bus(redis_client, keys=capture_keys(2)).meta())["generation"]

        # In a thread: a fast shutdown waits for the walsender, which waits for this
        # process's consumer to answer.
        await asyncio.to_thread(own_server.stop)
        up_writer = Writer(up, 60)
        for _ in range(20):
            await up_writer.step(d)
        await eventually(lambda: caught_up(d, redis_client, up))  # shard 1 publishes on

        async def shard_2_dead() -> bool:
            return not await redis_client.exists(capture_keys(2).alive)
        await eventually(shard_2_dead)
        assert capture.consumer(1).active and not capture.consumer(2).active
        # The fan-out serves shard 1's events from the stream and reads shard 2's own
        # database for its (its consumer is not live).
        hub = Hub(redis_client, settings, SeatmapMetrics(),
                  shards=cast(Any, _Shards(capture.placement)))
        await hub.read_alive()
        assert (hub.live_for(up), hub.live_for(down), hub.live) == (True, False, False)

        await asyncio.to_thread(start_postgres, own_server.data_dir, own_server.port,
                                fast=True)  # back, same address
        async with asyncpg_connect(dsn) as s2:
            down_writer = Writer(down, 60)
            for _ in range(20):
                await down_writer.step(s2)
            await eventually(lambda: caught_up(s2, redis_client, down), within=60)
        # It resumed from its slot and Redis: no rebuild, no reset.
        assert (await Bus(redis_client, keys=capture_keys(2)).meta())["generation"] \
            == generation
        assert [e.kind for e in await entries(redis_client, down)].count("reset") == 1


class _Shards:
    def __init__(self, placement: Placement) -> None:
        self.placement = placement


async def test_a_moved_event_is_published_by_its_new_shard_alone(
        two_shards: TwoShards, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    """The copy on shard 2 is skipped until the switch; then shard 2's consumer rebuilds
    and publishes it, and what is left of it on shard 1 is skipped."""
    settings = seatmap_settings()
    async with asyncpg_connect(two_shards.directory) as d, \
            asyncpg_connect(two_shards.shard2) as s2:
        await _wal_ahead(d, s2)  # the move goes back in WAL positions: the hard case
        moving, staying = await place(d, d, 1, 50), await place(d, d, 1, 30)
        async with capturing(two_shards.directory, {2: two_shards.shard2}, valkey,
                             settings) as capture:
            await eventually(lambda: caught_up(d, redis_client, moving))

            async def shard_2_streams() -> bool:
                return 2 in capture.running and capture.consumer(2).active
            await eventually(shard_2_streams)
            await create_event(s2, 50, event_id=moving)  # the copy, before the switch
            copy = Writer(moving, 50)
            for _ in range(5):
                await copy.step(s2)
            await eventually(lambda: caught_up(d, redis_client, moving))  # still shard 1's
            await d.execute("UPDATE event_placement SET shard_id = 2 WHERE event_id = $1",
                            moving)
            await eventually(lambda: caught_up(s2, redis_client, moving))
            assert moving in await Bus(redis_client, keys=capture_keys(2)).events()
            old = Writer(moving, 50)
            for _ in range(10):  # the rows left behind on shard 1 change: not published
                await old.step(d)
            for _ in range(10):
                await copy.step(s2)
            staying_writer = Writer(staying, 30)
            for _ in range(5):  # a later shard-1 change: shard 1's consumer got past them
                await staying_writer.step(d)
            await eventually(lambda: caught_up(d, redis_client, staying))
            await eventually(lambda: caught_up(s2, redis_client, moving))
            assert_chain(await entries(redis_client, moving))


async def _wal_ahead(ahead: Any, behind: Any) -> None:
    """Move ``ahead``'s server past ``behind``'s WAL position (a new segment at a time)."""
    target = await behind.fetchval("SELECT pg_current_wal_lsn()::text")
    for _ in range(64):
        if await ahead.fetchval("SELECT pg_current_wal_lsn() > $1::text::pg_lsn", target):
            return
        await ahead.execute("SELECT pg_logical_emit_message(false, 'test', 'x')")
        await ahead.execute("SELECT pg_switch_wal()")
    raise AssertionError("could not move the WAL ahead")
