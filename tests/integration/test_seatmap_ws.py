"""The seat map end to end: PostgreSQL → consumer → Valkey → hub → WebSocket and HTTP,
with a real uvicorn and real WebSocket clients (docs/seatmap-protocol.md)."""

from __future__ import annotations

import contextlib
import json
import re
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio
from prometheus_client import generate_latest

from onsale.compose import Tiers, app_for
from onsale.embedded import EmbeddedValkey
from onsale.kernel.problems import Problem
from onsale.seatmap.bus import EVENTS, META, Bus
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.pgoutput import format_lsn
from onsale.seatmap.routes import allow_all
from onsale.seatmap.sequencer import SequenceError, replay
from onsale.seatmap.snapshot import SeatMap, decode
from tests.conftest import make_settings
from tests.seatmap_support import (
    SET_HELD,
    Viewer,
    Writer,
    consumer,
    create_event,
    db_map,
    entries,
    same_seats,
    seatmap_settings,
    serving,
)
from tests.stack import eventually


@contextlib.asynccontextmanager
async def seatmap_stack(db_url: str, valkey: EmbeddedValkey, settings: SeatmapSettings, *,
                        cdc: bool = True, sndbuf: int | None = None,
                        gate: Any = None) -> AsyncIterator[tuple[str, Any]]:
    core = make_settings(db_url, redis_url=valkey.url)
    app = app_for(Tiers(seatmap=True), core, seatmap=settings, seatmap_gate=gate or allow_all)
    async with contextlib.AsyncExitStack() as stack:
        if cdc:
            await stack.enter_async_context(consumer(db_url, valkey.url, settings))
        address = await stack.enter_async_context(serving(app, sndbuf=sndbuf))
        yield address, app


async def latest(r: redis.asyncio.Redis, conn: Any, event_id: int) -> str | None:
    """The event's version once Redis holds exactly the table's state. The snapshot and
    the stream are two reads: one that raced the consumer's snapshot-and-trim sees a gap
    (SequenceError), and is not the state yet."""
    try:
        found = await Bus(r).load_state(event_id)
    except SequenceError:
        return None
    if found is None or not same_seats(found, await db_map(conn, event_id)):
        return None
    return format_lsn(found.version)


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "queued"])
async def test_every_change_reaches_a_client_in_commit_order(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        direct: bool,
) -> None:
    event_id = await create_event(conn, 300)
    writer = Writer(event_id, 300)
    settings = seatmap_settings(direct_writes=direct, gzip_min_bytes=100)  # some compressed
    async with seatmap_stack(db_url, valkey, settings) as (address, app):
        await eventually(lambda: latest(redis_client, conn, event_id))
        async with Viewer(address, event_id) as viewer:
            await eventually(lambda: _got_snapshot(viewer))
            for _ in range(200):
                await writer.step(conn)
            final = await eventually(lambda: latest(redis_client, conn, event_id))
            await eventually(lambda: viewer.at(final))
        writer_kind = "direct" if direct else "queued"
        assert _metric(app, f'onsale_seatmap_connections_total{{writer="{writer_kind}"}}') == 1
    assert viewer.kinds[0] == "snapshot" and viewer.broken == [] and viewer.reloads == []
    assert viewer.binary > 1  # the snapshot and the larger deltas came gzip-compressed
    assert viewer.state is not None and same_seats(viewer.state, await db_map(conn, event_id))
    # Each frame leaves the client exactly where the stream (one entry per commit, in
    # commit order, as the writer committed them) is at that frame's version.
    stream = [e for e in await entries(redis_client, event_id) if e.kind == "delta"]
    assert [e.changes for e in stream] == writer.expected
    assert viewer.initial is not None and viewer.frames
    model = viewer.initial.copy()
    states: dict[str, SeatMap] = {}
    for entry in stream:
        if entry.to > model.version:
            replay(model, [entry])
            states[format_lsn(entry.to)] = model.copy()
    for frm, to, state in viewer.frames:
        assert to in states, (frm, to)
        assert same_seats(state, states[to]), to


async def _hub_at(app: Any, event_id: int, version: str) -> bool:
    channel = app.state.seatmap.hub.channels.get(event_id)
    return (channel is not None and channel.ready.is_set()
            and format_lsn(channel.state.version) == version)


async def _got_snapshot(viewer: Viewer) -> bool:
    return viewer.state is not None


async def test_resume_with_since_ends_with_exactly_the_database_state(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 200)
    writer = Writer(event_id, 200)
    async with seatmap_stack(db_url, valkey, seatmap_settings()) as (address, _):
        await eventually(lambda: latest(redis_client, conn, event_id))
        async with Viewer(address, event_id) as first:
            for _ in range(40):
                await writer.step(conn)
            mid = await eventually(lambda: latest(redis_client, conn, event_id))
            await eventually(lambda: first.at(mid))
        for _ in range(40):  # while it is away
            await writer.step(conn)
        async with Viewer(address, event_id, since=first.version, state=first.state) as again:
            for _ in range(40):
                await writer.step(conn)
            final = await eventually(lambda: latest(redis_client, conn, event_id))
            await eventually(lambda: again.at(final))
    assert again.kinds[0] == "delta"  # the missing deltas, not a snapshot
    assert again.broken == [] and again.state is not None
    assert same_seats(again.state, await db_map(conn, event_id))


async def test_a_client_far_behind_gets_a_snapshot(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 200)
    writer = Writer(event_id, 200)
    settings = seatmap_settings(stream_maxlen=100)  # the hub keeps 100 to 200 entries
    async with seatmap_stack(db_url, valkey, settings) as (address, app):
        await eventually(lambda: latest(redis_client, conn, event_id))
        async with Viewer(address, event_id) as first:
            await eventually(lambda: _got_snapshot(first))
        for _ in range(300):
            await writer.step(conn)
        final = await eventually(lambda: latest(redis_client, conn, event_id))
        # The hub's reader, 300 entries behind a stream that keeps 100 to 200, may meet
        # the gap and reload: a client that joined before that would be sent to reload
        # too (a browser reconnects). The clients below join once the hub has caught up.
        await eventually(lambda: _hub_at(app, event_id, final))
        for since in (first.version, "0/1", "not-a-version"):
            async with Viewer(address, event_id, since=since) as late:
                await eventually(lambda v=late: v.at(final))
            assert late.kinds[0] == "snapshot", (since, late.kinds, late.version, final)
            assert late.state is not None
            assert same_seats(late.state, await db_map(conn, event_id))


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "queued"])
async def test_a_slow_client_is_cut_off_without_delaying_others(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        direct: bool,
) -> None:
    from websockets.asyncio.client import connect

    event_id = await create_event(conn, 1000)
    # Frames that compress well would never fill a buffer: this test sends them as text.
    settings = seatmap_settings(client_queue=4, client_buffer_kb=64, direct_writes=direct,
                                gzip_min_bytes=0)
    async with seatmap_stack(db_url, valkey, settings, sndbuf=8192) as (address, app):
        await eventually(lambda: latest(redis_client, conn, event_id))
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        host, port = address.split(":")
        raw.connect((host, int(port)))
        slow = await connect(f"ws://{address}/ws/events/{event_id}/seatmap", sock=raw,
                             max_queue=1, max_size=None)  # then reads nothing for a while
        async with Viewer(address, event_id) as fast:
            await eventually(lambda: _got_snapshot(fast))
            everything = list(range(1, 1001))
            for i in range(80):  # each commit changes all 1,000 seats: big frames
                await conn.execute(SET_HELD, event_id, everything, float(1_900_000_000 + i))
            final = await eventually(lambda: latest(redis_client, conn, event_id))
            await eventually(lambda: fast.at(final))  # while the slow one is stuck
            overflows = _metric(app, "onsale_seatmap_client_overflows_total")
            assert overflows >= 1
        assert fast.broken == [] and fast.reloads == []
        got: list[Any] = []
        with contextlib.suppress(Exception):
            async for message in slow:
                got.append(message)
        assert json.loads(got[-1]) == {"type": "reload", "reason": "overflow"}
        assert slow.close_code == 4000


def _metric(app: Any, name: str) -> float:
    text = generate_latest(app.state.seatmap.hub.metrics.registry).decode()
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found[1]) if found else 0.0


async def test_http_snapshot_with_etag_and_cache_control(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 250)
    writer = Writer(event_id, 250)
    async with seatmap_stack(db_url, valkey, seatmap_settings()) as (address, _):
        for _ in range(30):
            await writer.step(conn)
        final = await eventually(lambda: latest(redis_client, conn, event_id))
        url = f"http://{address}/api/events/{event_id}/seatmap"
        async with httpx.AsyncClient() as http:
            async def current() -> httpx.Response | None:
                r = await http.get(url)
                fresh = r.headers.get("seatmap-version") == final
                return r if fresh and r.headers["seatmap-source"] == "stream" else None

            r = await eventually(current)
            assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
            assert r.headers["cache-control"] == "public, max-age=1"
            assert r.headers["etag"] == f'"{final}-gzip"'
            doc = r.json()
            assert doc["version"] == final and len(doc["status"]) == 250
            assert same_seats(decode(r.content), await db_map(conn, event_id))
            again = await http.get(url, headers={"If-None-Match": r.headers["etag"]})
            assert again.status_code == 304
            plain = await http.get(url, headers={"Accept-Encoding": "identity"})
            assert plain.headers["etag"] == f'"{final}"' and plain.json() == doc
            missing = await http.get(f"http://{address}/api/events/999999/seatmap")
            assert missing.status_code == 404 and missing.json()["code"] == "event_not_found"


async def test_without_change_capture_clients_poll_the_database(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 120)
    await Writer(event_id, 120).step(conn)
    async with seatmap_stack(db_url, valkey, seatmap_settings(), cdc=False) as (address, _):
        async with httpx.AsyncClient() as http:
            r = await http.get(f"http://{address}/api/events/{event_id}/seatmap")
        assert r.status_code == 200 and r.headers["seatmap-source"] == "database"
        assert r.headers["cache-control"] == "public, max-age=5"
        assert same_seats(decode(r.content), await db_map(conn, event_id))
        async with Viewer(address, event_id) as viewer:
            await eventually(lambda: _closed(viewer))
        assert viewer.kinds == ["unavailable"] and viewer.close_code == 1013


async def _closed(viewer: Viewer) -> bool:
    return viewer.close_code is not None


async def test_the_admission_gate_plugs_in(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    event_id = await create_event(conn, 50)
    seen: list[int] = []

    async def gate(connection: Any, event: int) -> None:
        seen.append(event)
        if connection.headers.get("admission-token") != "ok":
            raise Problem(403, "admission_required")

    async with seatmap_stack(db_url, valkey, seatmap_settings(), gate=gate) as (address, _):
        url = f"http://{address}/api/events/{event_id}/seatmap"
        async with httpx.AsyncClient() as http:
            refused = await http.get(url)
            admitted = await http.get(url, headers={"Admission-Token": "ok"})
        assert refused.status_code == 403 and refused.json()["code"] == "admission_required"
        assert admitted.status_code == 200
        with pytest.raises(InvalidStatus) as denied:
            await connect(f"ws://{address}/ws/events/{event_id}/seatmap")
        assert denied.value.response.status_code == 403
        ws = await connect(f"ws://{address}/ws/events/{event_id}/seatmap",
                           additional_headers={"Admission-Token": "ok"})
        await ws.close()
    assert seen == [event_id] * 4


async def test_heartbeats_and_held_seats_with_their_expiry(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 40)
    async with seatmap_stack(db_url, valkey, seatmap_settings()) as (address, _):
        await eventually(lambda: latest(redis_client, conn, event_id))
        async with Viewer(address, event_id) as viewer:
            await eventually(lambda: _got_snapshot(viewer))
            await conn.execute(SET_HELD, event_id, [3, 4], 1_900_000_000.25)
            await eventually(lambda: _heartbeat_live(viewer))
            final = await eventually(lambda: latest(redis_client, conn, event_id))
            await eventually(lambda: viewer.at(final))
    assert viewer.state is not None
    assert viewer.state.get(3) == (1, 1_900_000_001) and viewer.state.expires == {
        3: 1_900_000_001, 4: 1_900_000_001}


async def _heartbeat_live(viewer: Viewer) -> bool:
    return any(h["live"] for h in viewer.heartbeats)


async def test_a_rebuild_tells_every_client_to_reload(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 60)
    writer = Writer(event_id, 60)
    async with seatmap_stack(db_url, valkey, seatmap_settings()) as (address, _):
        await eventually(lambda: latest(redis_client, conn, event_id))
        async with Viewer(address, event_id) as viewer:
            await eventually(lambda: _got_snapshot(viewer))
            await redis_client.delete(META, EVENTS)  # Redis lost the seat maps
            await writer.step(conn)
            await eventually(lambda: _closed(viewer))
        assert viewer.reloads == ["rebuild"] and viewer.close_code == 4000
        # Reconnecting with the old version: a snapshot of the rebuilt map.
        final = await eventually(lambda: latest(redis_client, conn, event_id))
        async with Viewer(address, event_id, since=viewer.version) as again:
            await eventually(lambda: again.at(final))
        assert again.kinds[0] == "snapshot"


async def test_an_invalidated_slot_means_a_rebuild_and_clients_reload(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    """The slot loses its WAL (max_slot_wal_keep_size) while no consumer runs: the next
    consumer rebuilds from a new slot and every connected client is told to reload."""
    event_id = await create_event(conn, 80)
    writer = Writer(event_id, 80)
    settings = seatmap_settings()
    core = make_settings(db_url, redis_url=valkey.url)
    app = app_for(Tiers(seatmap=True), core, seatmap=settings, seatmap_gate=allow_all)
    async with serving(app) as address:
        async with consumer(db_url, valkey.url, settings, keep_slot=True):
            await eventually(lambda: latest(redis_client, conn, event_id))
        generation = await redis_client.hget(META, "generation")
        async with Viewer(address, event_id) as viewer:
            await eventually(lambda: _got_snapshot(viewer))
            await writer.step(conn)  # waits in the slot, then is lost with it
            await conn.execute("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'")
            await conn.execute("SELECT pg_reload_conf()")
            try:
                await conn.execute("CREATE TABLE wal_filler (x text)")
                for _ in range(3):
                    await conn.execute("INSERT INTO wal_filler SELECT repeat('x', 1000) "
                                       "FROM generate_series(1, 3000)")
                    await conn.execute("SELECT pg_switch_wal()")
                await conn.execute("CHECKPOINT")
                lost = await conn.fetchval("SELECT wal_status FROM pg_replication_slots "
                                           "WHERE slot_name = $1", settings.slot)
                assert lost == "lost"
            finally:
                await conn.execute("ALTER SYSTEM RESET max_slot_wal_keep_size")
                await conn.execute("SELECT pg_reload_conf()")
            async with consumer(db_url, valkey.url, settings):
                await eventually(lambda: _closed(viewer))
                final = await eventually(lambda: latest(redis_client, conn, event_id))
        assert viewer.reloads == ["rebuild"] and viewer.close_code == 4000
        assert await redis_client.hget(META, "generation") != generation
        assert final is not None
