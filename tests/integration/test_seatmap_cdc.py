"""The change-capture consumer against a real PostgreSQL slot and a real Valkey:
rebuild, deltas in commit order, snapshots, restart, replays, Redis loss, a
quiet database, the lease."""

from __future__ import annotations

import contextlib
from typing import Any

import redis.asyncio

from onsale.embedded import EmbeddedValkey
from onsale.seatmap.bus import EVENTS, META, Bus, snap_key
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.pgoutput import parse_lsn
from onsale.seatmap.snapshot import decode
from tests.seatmap_support import (
    Writer,
    assert_chain,
    consumer,
    create_event,
    db_map,
    entries,
    redis_map,
    same_seats,
    seatmap_settings,
)
from tests.stack import eventually


async def caught_up(conn: Any, r: redis.asyncio.Redis, event_id: int) -> bool:
    found = await redis_map(r, event_id)
    return found is not None and same_seats(found, await db_map(conn, event_id))


async def test_rebuild_then_every_transaction_in_commit_order(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 300)
    writer = Writer(event_id, 300)
    for _ in range(20):  # before the consumer exists: part of the initial load
        await writer.step(conn)
    writer.expected.clear()
    settings = seatmap_settings()
    async with consumer(db_url, valkey.url, settings):
        await eventually(lambda: caught_up(conn, redis_client, event_id))
        first = await entries(redis_client, event_id)
        assert [(e.kind, e.reason) for e in first] == [("reset", "rebuild")]
        for _ in range(150):
            await writer.step(conn)
        await eventually(lambda: caught_up(conn, redis_client, event_id))
        found = await entries(redis_client, event_id)
    assert_chain(found)
    deltas = found[1:]
    assert all(e.kind == "delta" for e in deltas)
    assert [e.changes for e in deltas] == writer.expected  # every transaction, in order, once


async def test_snapshot_equals_a_select_at_its_version(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 500)
    writer = Writer(event_id, 500)
    async with consumer(db_url, valkey.url, seatmap_settings()):
        for _ in range(60):
            await writer.step(conn)
        version = await eventually(lambda: _version_if_caught_up(conn, redis_client, event_id))

        async def snapshot_at_version() -> bytes | None:
            raw = await redis_client.hget(snap_key(event_id), "gz")
            return raw if raw and decode(raw).version == version else None

        body = await eventually(snapshot_at_version)
        # Nothing committed since: the table is at that version.
        assert same_seats(decode(body), await db_map(conn, event_id))
        assert decode(body).version == version


async def _version_if_caught_up(conn: Any, r: redis.asyncio.Redis, event_id: int) -> int:
    if not await caught_up(conn, r, event_id):
        return 0
    return (await Bus(r).versions())[event_id]


async def test_a_new_event_arrives_through_the_stream(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    async with consumer(db_url, valkey.url, seatmap_settings()):
        await eventually(lambda: _has_generation(redis_client))
        event_id = await create_event(conn, 120)
        await eventually(lambda: caught_up(conn, redis_client, event_id))
        found = await entries(redis_client, event_id)
        assert [(e.kind, e.reason) for e in found] == [("reset", "new")]


async def _has_generation(r: redis.asyncio.Redis) -> bool:
    return bool(await r.hget(META, "generation"))


async def test_restart_resumes_without_a_reset_or_a_duplicate(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 200)
    writer = Writer(event_id, 200)
    settings = seatmap_settings()
    metrics = SeatmapMetrics()
    async with consumer(db_url, valkey.url, settings, metrics, keep_slot=True):
        await eventually(lambda: _has_generation(redis_client))  # loaded: now stream
        for _ in range(30):
            await writer.step(conn)
        await eventually(lambda: caught_up(conn, redis_client, event_id))
    generation = await redis_client.hget(META, "generation")
    for _ in range(30):  # while no consumer runs: they wait in the slot
        await writer.step(conn)
    async with consumer(db_url, valkey.url, settings, metrics):
        for _ in range(30):
            await writer.step(conn)
        await eventually(lambda: caught_up(conn, redis_client, event_id))
    assert await redis_client.hget(META, "generation") == generation  # no rebuild
    found = await entries(redis_client, event_id)
    assert_chain(found)
    assert [e.changes for e in found[1:]] == writer.expected
    assert metrics.rebuilds.labels("1", "no slot")._value.get() == 1  # the first start only


async def test_redis_loss_means_a_rebuild_and_a_new_generation(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 100)
    writer = Writer(event_id, 100)
    settings = seatmap_settings()
    async with consumer(db_url, valkey.url, settings) as c:
        await eventually(lambda: caught_up(conn, redis_client, event_id))
        old = await redis_client.hget(META, "generation")
        await redis_client.delete(EVENTS, META)  # Redis lost the seat maps
        for _ in range(5):
            await writer.step(conn)
        # The next publish is fenced off; the consumer starts over and rebuilds.
        await eventually(lambda: _new_generation(redis_client, old))
        await eventually(lambda: caught_up(conn, redis_client, event_id))
        assert c.active
    found = await entries(redis_client, event_id)
    resets = [i for i, e in enumerate(found) if e.kind == "reset"]
    assert len(resets) == 2 and found[resets[1]].reason == "rebuild"
    assert_chain(found[resets[1]:])


async def _new_generation(r: redis.asyncio.Redis, old: bytes | None) -> bool:
    new = await r.hget(META, "generation")
    return new is not None and new != old


async def test_a_quiet_database_still_moves_the_slot(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    settings = seatmap_settings()
    async with consumer(db_url, valkey.url, settings):
        await eventually(lambda: _has_generation(redis_client))
        # WAL that the publication does not carry (another table), then nothing.
        await conn.execute("CREATE TABLE quiet_noise (x int)")
        await conn.execute("INSERT INTO quiet_noise SELECT generate_series(1, 1000)")
        target = parse_lsn(await conn.fetchval("SELECT pg_current_wal_lsn()::text"))

        async def moved() -> bool:
            row = await conn.fetchrow("SELECT confirmed_flush_lsn::text AS c "
                                      "FROM pg_replication_slots WHERE slot_name = $1",
                                      settings.slot)
            return row is not None and parse_lsn(row["c"]) >= target

        await eventually(moved)


async def test_one_consumer_per_slot_and_the_standby_takes_over(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 200)
    writer = Writer(event_id, 200)
    settings = seatmap_settings()
    first_stack = contextlib.AsyncExitStack()
    first = await first_stack.enter_async_context(
        consumer(db_url, valkey.url, settings, keep_slot=True))
    try:
        await eventually(lambda: _active(first))
        await eventually(lambda: _has_generation(redis_client))
        async with consumer(db_url, valkey.url, settings) as second:
            for _ in range(20):
                await writer.step(conn)
            await eventually(lambda: caught_up(conn, redis_client, event_id))
            assert first.active and not second.active
            # The first one goes away (its sessions close): the standby takes the lease.
            await first_stack.aclose()
            await eventually(lambda: _active(second))
            for _ in range(20):
                await writer.step(conn)
            await eventually(lambda: caught_up(conn, redis_client, event_id))
    finally:
        await first_stack.aclose()
    found = await entries(redis_client, event_id)
    assert_chain(found)
    assert [e.changes for e in found[1:]] == writer.expected


async def _active(*consumers: Any) -> bool:
    return any(c.active for c in consumers)
