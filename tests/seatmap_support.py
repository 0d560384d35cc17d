"""Helpers for the seat-map tests: settings with a private slot, events and
transactions written straight to seat_inventory (with a model of what each
one changes), reading the Redis side back, and dropping slots afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from redis.asyncio import Redis

from onsale.seatmap.bus import Bus, stream_key
from onsale.seatmap.cdc import Consumer
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.sequencer import Entry, parse_stream_entry
from onsale.seatmap.snapshot import HELD, SeatMap, visible
from onsale.seatmap.tier import running_capture
from tests.conftest import make_settings

EVENT_SQL = """INSERT INTO events (name, starts_at, onsale_at, hold_ttl_seconds,
    max_tickets_per_account, max_seats_per_hold, seat_count)
    VALUES ($1, now() + interval '1 day', now(), 300, 6, 6, $2) RETURNING event_id"""
EVENT_WITH_ID_SQL = """INSERT INTO events (event_id, name, starts_at, onsale_at,
    hold_ttl_seconds, max_tickets_per_account, max_seats_per_hold, seat_count)
    OVERRIDING SYSTEM VALUE
    VALUES ($3, $1, now() + interval '1 day', now(), 300, 6, 6, $2)"""


def seatmap_settings(**overrides: Any) -> SeatmapSettings:
    base: dict[str, Any] = dict(
        slot=f"t_{uuid.uuid4().hex[:16]}", snapshot_interval_ms=200, heartbeat_interval_ms=200,
        lease_retry_ms=100, tick_ms=50, client_heartbeat_s=1, ping_interval_s=2)
    base.update(overrides)
    return SeatmapSettings(**base)


@contextlib.asynccontextmanager
async def consumer(db_url: str, redis_url: str, settings: SeatmapSettings,
                   metrics: SeatmapMetrics | None = None, *,
                   keep_slot: bool = False) -> AsyncIterator[Consumer]:
    """An in-process consumer; the slot is dropped when the block ends (unless kept)."""
    core = make_settings(db_url, redis_url=redis_url)
    try:
        async with running_capture(core, settings, metrics or SeatmapMetrics()) as c:
            yield c
    finally:
        if not keep_slot:
            await drop_slot(db_url, settings.slot)


async def drop_slot(db_url: str, slot: str, within: float = 30) -> None:
    conn = await asyncpg.connect(db_url)
    try:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            row = await conn.fetchrow(
                "SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1", slot)
            if row is None:
                return
            if row["active_pid"] is not None:
                await conn.execute("SELECT pg_terminate_backend($1)", row["active_pid"])
                await asyncio.sleep(0.1)
                continue
            with contextlib.suppress(asyncpg.PostgresError):
                await conn.execute("SELECT pg_drop_replication_slot($1)", slot)
        raise AssertionError(f"slot {slot} could not be dropped")
    finally:
        await conn.close()


async def create_event(conn: Any, seats: int, name: str = "seat map night",
                       ga: tuple[tuple[int, int], ...] = (), *,
                       event_id: int | None = None) -> int:
    """An event with seats 1..n, all AVAILABLE, and GA tiers 1, 2, … of (capacity,
    stripes), the capacity split over the stripes, in one transaction (as core creates
    them). ``event_id``: the id the directory allocated (an event on another shard)."""
    from onsale.core.event_store import split

    async with conn.transaction():
        if event_id is None:
            event_id = int(await conn.fetchval(EVENT_SQL, name, seats))
        else:
            await conn.execute(EVENT_WITH_ID_SQL, name, seats, event_id)
        for tier_id, (capacity, stripes) in enumerate(ga, start=1):
            await conn.execute(
                "INSERT INTO ga_tiers (event_id, tier_id, name, price_minor, capacity, "
                "max_per_hold, stripes) VALUES ($1, $2, $3, 100, $4, 6, $5)",
                event_id, tier_id, f"GA {tier_id}", capacity, stripes)
            await conn.execute(
                "INSERT INTO ga_buckets (event_id, tier_id, stripe, available) "
                "SELECT $1, $2, s, a FROM unnest($3::smallint[], $4::integer[]) AS x(s, a)",
                event_id, tier_id, list(range(stripes)), split(capacity, stripes))
        await conn.copy_records_to_table(
            "seats", columns=["event_id", "seat_id", "section", "row_label", "number", "x", "y",
                              "tier_id", "rank"],
            records=[(event_id, s, "S1", "A", s, 0.0, 0.0, 1, s) for s in range(1, seats + 1)])
        await conn.execute("INSERT INTO seat_inventory (event_id, seat_id) "
                           "SELECT event_id, seat_id FROM seats WHERE event_id = $1", event_id)
    return event_id


async def db_map(conn: Any, event_id: int) -> SeatMap:
    """The event's seat map as a direct SELECT sees it."""
    seat_map = SeatMap(event_id)
    for row in await conn.fetch("SELECT seat_id, status, hold_expires_at FROM seat_inventory "
                                "WHERE event_id = $1 ORDER BY seat_id", event_id):
        seat_map.set(row["seat_id"], *visible(row["status"], row["hold_expires_at"]))
    for row in await conn.fetch("SELECT tier_id, stripe, available FROM ga_buckets "
                                "WHERE event_id = $1", event_id):
        seat_map.set_places(row["tier_id"], row["stripe"], row["available"])
    return seat_map


def same_seats(a: SeatMap, b: SeatMap) -> bool:
    """The same seats and the same GA places."""
    return (a.status, a.expires, a.places) == (b.status, b.expires, b.places)


_WHERE = "WHERE event_id = $1 AND seat_id = ANY($2::int[])"
SET_HELD = """UPDATE seat_inventory SET status = 'HELD', hold_id = gen_random_uuid(),
    order_id = NULL, hold_expires_at = to_timestamp($3), version = version + 1 """ + _WHERE
SET_SOLD = """UPDATE seat_inventory SET status = 'SOLD', order_id = gen_random_uuid(),
    hold_expires_at = NULL, version = version + 1 """ + _WHERE
SET_FREE = """UPDATE seat_inventory SET status = 'AVAILABLE', hold_id = NULL, order_id = NULL,
    hold_expires_at = NULL, version = version + 1 """ + _WHERE


@dataclass
class Writer:
    """Commits one small transaction at a time and keeps a model of each one's
    visible changes: with one writer, commit order is call order."""

    event_id: int
    seats: int
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    model: SeatMap | None = None
    expected: list[list[tuple[int, int, int | None]]] = field(default_factory=list)
    n: int = 0

    async def step(self, conn: Any) -> None:
        if self.model is None:
            self.model = await db_map(conn, self.event_id)
        self.n += 1
        seat_ids = sorted(self.rng.sample(range(1, self.seats + 1), self.rng.randint(1, 4)))
        kind = self.rng.random()
        if kind < 0.6:  # a hold with an expiry no earlier state had
            expires = 1_900_000_000 + self.n
            await conn.execute(SET_HELD, self.event_id, seat_ids, float(expires))
            target = (HELD, expires)
        elif kind < 0.8:
            await conn.execute(SET_SOLD, self.event_id, seat_ids)
            target = (3, None)
        else:
            await conn.execute(SET_FREE, self.event_id, seat_ids)
            target = (0, None)
        changes = [(s, *target) for s in seat_ids if self.model.get(s) != target]
        for s in seat_ids:
            self.model.set(s, *target)
        if changes:
            self.expected.append(changes)  # type: ignore[arg-type]


async def entries(redis: Redis, event_id: int) -> list[Entry]:
    raw = await redis.xrange(stream_key(event_id))
    return [parse_stream_entry(event_id, fields) for _, fields in raw]


def assert_chain(found: list[Entry]) -> None:
    """Contiguous: each delta starts where the previous entry ended, versions increase."""
    for prev, cur in itertools.pairwise(found):
        assert cur.to > prev.to, (prev, cur)
        if cur.kind == "delta":
            assert cur.frm == prev.to, (prev, cur)


async def redis_map(redis: Redis, event_id: int) -> SeatMap | None:
    return await Bus(redis).load_state(event_id)


@contextlib.asynccontextmanager
async def serving(app: Any, *, sndbuf: int | None = None,
                  ws_max_size: int | None = None) -> AsyncIterator[str]:
    """The app under a real uvicorn on a free port (WebSockets: the sans-I/O protocol, as
    ``onsale serve``); ``sndbuf`` shrinks the accepted sockets' send buffers;
    ``ws_max_size`` caps client messages in the protocol, as ``onsale serve`` does."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if sndbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    extra = {} if ws_max_size is None else {"ws_max_size": ws_max_size}
    config = uvicorn.Config(app, log_level="warning", ws="websockets-sansio",
                            ws_per_message_deflate=False, ws_ping_interval=2,
                            ws_ping_timeout=5, lifespan="on", **extra)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    deadline = time.monotonic() + 30
    while not server.started:
        if task.done() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start: {task}")
        await asyncio.sleep(0.02)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


class Viewer:
    """A WebSocket client that applies what it gets as a browser would, and records it."""

    def __init__(self, address: str, event_id: int, since: str | None = None,
                 state: SeatMap | None = None) -> None:
        query = f"?since={since}" if since else ""
        self.url = f"ws://{address}/ws/events/{event_id}/seatmap{query}"
        self.state = state.copy() if state is not None else None  # what it had before
        self.version = since if state is not None else None
        self.initial: SeatMap | None = None  # the first snapshot it was sent
        self.initial_version: str | None = None
        self.kinds: list[str] = []  # every message's type, in order
        self.messages: list[dict[str, Any]] = []  # and every message, decoded
        self.frames: list[tuple[str, str, SeatMap]] = []  # (from, to, state after)
        self.broken: list[str] = []  # deltas whose from did not match
        self.reloads: list[str] = []
        self.heartbeats: list[dict[str, Any]] = []
        self.close_code: int | None = None
        self.binary = 0  # messages that came gzip-compressed
        self.ws: Any = None
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Viewer:
        from websockets.asyncio.client import connect

        self.ws = await connect(self.url, max_size=None)
        self.task = asyncio.create_task(self._pump())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.close()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

    async def _pump(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for raw in self.ws:
                self.handle(raw)
        except ConnectionClosed:
            pass
        finally:
            self.close_code = self.ws.close_code

    def handle(self, raw: str | bytes) -> None:
        import gzip
        import json

        from onsale.seatmap.snapshot import decode

        if isinstance(raw, bytes):  # any message, gzip-compressed
            raw = gzip.decompress(raw).decode()
            self.binary += 1
        msg = json.loads(raw)
        self.kinds.append(msg["type"])
        self.messages.append(msg)
        if msg["type"] == "snapshot":
            self.state = decode(raw.encode())
            self.version = msg["version"]
            if self.initial is None:
                self.initial, self.initial_version = self.state.copy(), self.version
            return
        if msg["type"] == "delta":
            if self.state is None or msg["from"] != self.version:
                self.broken.append(f"{msg['from']} after {self.version}")
                return
            for change in msg["changes"]:
                self.state.set(change[0], change[1], change[2] if len(change) > 2 else None)
            for tier_id, stripe, available in msg.get("ga", []):
                self.state.set_places(tier_id, stripe, available)
            self.version = msg["to"]
            self.frames.append((msg["from"], msg["to"], self.state.copy()))
        elif msg["type"] == "reload":
            self.reloads.append(msg["reason"])
        elif msg["type"] == "heartbeat":
            self.heartbeats.append(msg)

    async def at(self, version: str) -> bool:
        return self.version == version
