"""kill -9 of the change-capture consumer (``onsale serve --role cdc``) mid-stream, and a
crash between the publish and the confirm: after restarts, every transaction is in the
stream exactly once, in commit order."""

from __future__ import annotations

import asyncio
import os
import re
import urllib.request
from typing import Any

import redis.asyncio

from onsale.compose import Tiers, app_for
from onsale.embedded import EmbeddedValkey, free_port
from onsale.seatmap.bus import META, Bus
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.pgoutput import format_lsn
from onsale.seatmap.routes import allow_all
from tests.conftest import make_settings
from tests.seatmap_support import (
    Viewer,
    Writer,
    assert_chain,
    create_event,
    db_map,
    drop_slot,
    entries,
    redis_map,
    same_seats,
    seatmap_settings,
    serving,
)
from tests.stack import ONSALE, Process, eventually


def start_cdc(db_url: str, redis_url: str, settings: SeatmapSettings, **extra: str
              ) -> tuple[Process, int]:
    """A cdc process, and the port of its ops listener (its /metrics)."""
    port, ops_port = free_port(), free_port()
    env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": redis_url,
           "ONSALE_SEATMAP_SLOT": settings.slot, "ONSALE_SEATMAP_HEARTBEAT_INTERVAL_MS": "200",
           "ONSALE_SEATMAP_SNAPSHOT_INTERVAL_MS": "200", "ONSALE_SEATMAP_LEASE_RETRY_MS": "100",
           "ONSALE_OPS_PORT": str(ops_port), **extra}
    return Process([ONSALE, "serve", "--role", "cdc", "--port", str(port)], env, "serving on",
                   "cdc"), ops_port


def scrape(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    found = re.search(rf"^{name}(?:{{shard=\"1\"}})? (\S+)$", text, re.MULTILINE)
    return float(found[1]) if found else 0.0


async def caught_up(conn: Any, r: redis.asyncio.Redis, event_id: int) -> bool:
    found = await redis_map(r, event_id)
    return found is not None and same_seats(found, await db_map(conn, event_id))


async def write_until(stop: asyncio.Event, writer: Writer, conn: Any) -> None:
    while not stop.is_set():
        await writer.step(conn)
        await asyncio.sleep(0.002)


async def test_kill_9_mid_stream_loses_and_duplicates_nothing(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 400)
    settings = seatmap_settings()
    writer = Writer(event_id, 400)
    procs: list[Process] = []
    stop = asyncio.Event()
    app = app_for(Tiers(seatmap=True), make_settings(db_url, redis_url=valkey.url),
                  seatmap=settings, seatmap_gate=allow_all)
    try:
        proc, _ = start_cdc(db_url, valkey.url, settings)
        procs.append(proc)
        await eventually(lambda: redis_client.hget(META, "generation"))
        generation = await redis_client.hget(META, "generation")
        async with serving(app) as address, Viewer(address, event_id) as viewer:
            writing = asyncio.create_task(write_until(stop, writer, conn))
            for _ in range(3):
                published = len(await entries(redis_client, event_id))
                await eventually(lambda n=published: _more_entries(redis_client, event_id,
                                                                   n + 20))
                assert proc.kill9() == -9  # mid-stream: the writer never pauses
                proc, _ = start_cdc(db_url, valkey.url, settings)
                procs.append(proc)
            await eventually(lambda: _more_entries(redis_client, event_id, published + 40))
            stop.set()
            await writing
            await eventually(lambda: caught_up(conn, redis_client, event_id), within=60)
            final = format_lsn((await Bus(redis_client).versions())[event_id])
            await eventually(lambda: viewer.at(final))
    finally:
        stop.set()
        for p in procs:
            p.stop()
        await drop_slot(db_url, settings.slot)
    assert await redis_client.hget(META, "generation") == generation  # resumed, never rebuilt
    found = await entries(redis_client, event_id)
    assert_chain(found)
    assert [e.changes for e in found[1:]] == writer.expected
    assert len(writer.expected) > 100
    # The client saw one unbroken chain of versions, ending at the table's state.
    assert viewer.broken == [] and viewer.reloads == [] and viewer.kinds[0] == "snapshot"
    tos = [to for _, to, _ in viewer.frames]
    assert len(set(tos)) == len(tos) and viewer.frames[0][0] == viewer.initial_version
    assert viewer.state is not None and same_seats(viewer.state, await db_map(conn, event_id))


async def _more_entries(r: redis.asyncio.Redis, event_id: int, n: int) -> bool:
    return len(await entries(r, event_id)) >= n


async def test_crash_after_publish_before_confirm_is_replayed_once(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 200)
    settings = seatmap_settings()
    writer = Writer(event_id, 200)
    procs: list[Process] = []
    try:
        # Dies right after its 8th publish of entries, before confirming it.
        crashing, _ = start_cdc(db_url, valkey.url, settings,
                                ONSALE_SEATMAP_CRASH_AFTER_PUBLISHES="8")
        procs.append(crashing)
        await eventually(lambda: redis_client.hget(META, "generation"))
        while crashing.proc.poll() is None:
            await writer.step(conn)
            await asyncio.sleep(0.01)
        assert crashing.proc.returncode == -9
        proc, port = start_cdc(db_url, valkey.url, settings)
        procs.append(proc)
        for _ in range(20):
            await writer.step(conn)
        await eventually(lambda: caught_up(conn, redis_client, event_id))
        # What was published but not confirmed came back from the slot and was skipped.
        assert scrape(port, "onsale_seatmap_replayed_total") >= 1
    finally:
        for p in procs:
            p.stop()
        await drop_slot(db_url, settings.slot)
    found = await entries(redis_client, event_id)
    assert_chain(found)
    assert [e.changes for e in found[1:]] == writer.expected
