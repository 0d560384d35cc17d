"""The replication connection (psycopg2) and the slot's life: restore or rebuild.

asyncpg cannot speak the streaming replication protocol (CopyBoth), so the
slot is read through psycopg2's ``LogicalReplicationConnection`` (why, and
the alternative, in docs/seatmap.md). Its blocking calls (connect, create
the slot, start streaming) run in a thread; once streaming, ``read_message``
never blocks and is driven from the event loop (seatmap/cdc.py).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from onsale.seatmap.bus import Bus
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.metrics import CaptureMetrics
from onsale.seatmap.pgoutput import parse_lsn
from onsale.seatmap.queries import queries
from onsale.seatmap.snapshot import SeatMap, visible
from onsale.seatmap.timeline_doubt import doubt

log = logging.getLogger("onsale.seatmap.cdc")
_SNAPSHOT_NAME = re.compile(r"[0-9A-Fa-f-]+")


@dataclass
class Replication:
    conn: Any
    cur: Any

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # already gone
            pass


def connect(url: str) -> Replication:
    """Blocking: a logical replication connection with UTC text timestamps."""
    import psycopg2
    import psycopg2.extras

    # A bounded connect: a shard's server that does not answer must not hold this
    # consumer's thread for long (the others run on regardless, seatmap/capture.py).
    conn = psycopg2.connect(url, connection_factory=psycopg2.extras.LogicalReplicationConnection,
                            options="-c TimeZone=UTC -c DateStyle=ISO",
                            application_name="onsale-seatmap-cdc", connect_timeout=10)
    return Replication(conn, conn.cursor())


def timeline(repl: Replication) -> int:
    """Blocking: the timeline the server writes (IDENTIFY_SYSTEM)."""
    repl.cur.execute("IDENTIFY_SYSTEM")
    return int(repl.cur.fetchone()[1])


def timeline_history(repl: Replication, tli: int) -> str | None:
    """Blocking: timeline ``tli``'s history file (TIMELINE_HISTORY); None for timeline 1."""
    if tli <= 1:
        return None
    repl.cur.execute(f"TIMELINE_HISTORY {int(tli)}")
    content = repl.cur.fetchone()[1]
    return bytes(content).decode() if not isinstance(content, str) else content


def start(repl: Replication, settings: SeatmapSettings) -> None:
    """Blocking: stream from the slot's confirmed position."""
    repl.cur.start_replication(
        slot_name=settings.slot, decode=False,
        options={"proto_version": "1", "publication_names": settings.publication,
                 "messages": "true"})


async def ensure_publication(conn: Any, settings: SeatmapSettings) -> str | None:
    """Create the publication, or add the GA stripes to one made before them: then the
    reason the seat maps must be rebuilt (theirs lack the places), else None."""
    q = queries("cdc")
    if not await conn.fetchval(q["publication_exists"], settings.publication):
        await conn.execute(q["create_publication"].format(publication=settings.publication))
        log.info("created publication %s", settings.publication)
        return None
    if not await conn.fetchval(q["publication_has_ga"], settings.publication):
        await conn.execute(q["publication_add_ga"].format(publication=settings.publication))
        log.warning("added ga_buckets to publication %s", settings.publication)
        return "general admission added to the publication"
    return None


async def slot_row(conn: Any, settings: SeatmapSettings) -> Any:
    return await conn.fetchrow(queries("cdc")["slot"], settings.slot)


async def restore(conn: Any, repl: Replication, bus: Bus, settings: SeatmapSettings
                  ) -> tuple[dict[int, SeatMap], str] | str:
    """The seat maps as published in Redis, if Redis and the slot agree, and after a
    failover only if the new timeline holds everything they show
    (seatmap/timeline_doubt.py); else why not."""
    slot = await slot_row(conn, settings)
    if slot is None:
        return "no slot"
    if slot["wal_status"] == "lost" or slot["invalidation_reason"]:
        return f"slot invalidated ({slot['invalidation_reason'] or 'wal_status lost'})"
    meta = await bus.meta()
    if meta.get("slot") != settings.slot or not meta.get("generation"):
        return "no seat maps in Redis"
    published = int(meta.get("published", "0"), 16)
    if parse_lsn(slot["confirmed_flush_lsn"]) > published:
        return "Redis lost published entries"
    current = await asyncio.to_thread(timeline, repl)
    published_on = int(meta.get("timeline") or current)  # maps from before: this one
    if published_on != current:
        history = await asyncio.to_thread(timeline_history, repl, current)
        reason = doubt(published, published_on, current, history)
        if reason is not None:
            return reason
    maps = {}
    versions = await bus.versions()
    missing = sorted(await bus.events() - set(versions))  # listed, their keys gone
    if missing:
        return f"event {missing[0]} is incomplete in Redis"
    for event_id, version in versions.items():
        seat_map = await bus.load_state(event_id)
        if seat_map is None or seat_map.version != version:
            return f"event {event_id} is incomplete in Redis"
        maps[event_id] = seat_map
    if published_on != current and not await bus.move_timeline(meta["generation"], current):
        return "another generation owns the seat maps"
    return maps, meta["generation"]


async def _drop_slot(conn: Any, settings: SeatmapSettings) -> None:
    """Drop the slot; a walsender still attached belongs to a consumer that lost the lease."""
    for _ in range(50):
        slot = await slot_row(conn, settings)
        if slot is None:
            return
        if slot["active_pid"] is not None:
            await conn.execute("SELECT pg_terminate_backend($1)", slot["active_pid"])
            await asyncio.sleep(0.1)
            continue
        try:
            await conn.execute(queries("cdc")["drop_slot"], settings.slot)
            return
        except Exception as exc:  # became active in between: try again
            log.info("could not drop slot %s yet: %s", settings.slot, exc)
            await asyncio.sleep(0.1)
    raise RuntimeError(f"slot {settings.slot} stayed active")


async def _create_slot(conn: Any, repl: Replication, settings: SeatmapSettings) -> None:
    """Drop the slot and create it again. Under Patroni the slot is permanent (declared
    in its configuration, docs/operations.md#failover): Patroni may create it again in
    the moment between, and then it is dropped once more."""
    import psycopg2.errors

    for attempt in range(5):
        await _drop_slot(conn, settings)
        try:
            await asyncio.to_thread(repl.cur.create_replication_slot, settings.slot,
                                    output_plugin="pgoutput")
            return
        except psycopg2.errors.DuplicateObject:
            log.info("slot %s was created again meanwhile (attempt %d)", settings.slot,
                     attempt + 1)
    raise RuntimeError(f"slot {settings.slot} kept coming back")


def _never(event_id: int) -> bool:
    return False


async def rebuild(conn: Any, repl: Replication, bus: Bus, settings: SeatmapSettings,
                  metrics: CaptureMetrics, reason: str,
                  skip: Callable[[int], bool] = _never) -> tuple[dict[int, SeatMap], str]:
    """A new slot and every seat map from the snapshot it exports, as a new generation.

    The slot's exported snapshot holds exactly the transactions that commit
    before its consistent point; decoding starts at that point, so nothing is
    missed or applied twice. Every map gets version consistent_point - 1 (no
    commit at or after the consistent point is in it), and every client is
    told to reload. Events ``skip`` names (placed on another shard) are left out,
    and their keys left alone: another shard's consumer owns them."""
    log.warning("rebuilding the seat maps of slot %s: %s", settings.slot, reason)
    metrics.rebuilt(reason.split(" (")[0])
    tli = await asyncio.to_thread(timeline, repl)  # before the slot: its snapshot is
    await _create_slot(conn, repl, settings)       # valid until the next command
    _, consistent_point, snapshot_name, _ = await asyncio.to_thread(repl.cur.fetchone)
    if not _SNAPSHOT_NAME.fullmatch(snapshot_name):
        raise RuntimeError(f"unexpected snapshot name {snapshot_name!r}")
    base = parse_lsn(consistent_point) - 1
    maps: dict[int, SeatMap] = {}
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        await conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'")
        for row in await conn.fetch(queries("cdc")["load_inventory"]):
            event_id = row["event_id"]
            if skip(event_id):
                continue
            seat_map = maps.get(event_id)
            if seat_map is None:
                seat_map = maps[event_id] = SeatMap(event_id, base)
            seat_map.set(row["seat_id"], *visible(row["status"], row["hold_expires_at"]))
        for row in await conn.fetch(queries("cdc")["load_places"]):
            event_id = row["event_id"]
            if skip(event_id):
                continue
            seat_map = maps.get(event_id)
            if seat_map is None:  # general admission only
                seat_map = maps[event_id] = SeatMap(event_id, base)
            seat_map.set_places(row["tier_id"], row["stripe"], row["available"])
    generation = await bus.reset_all(settings.slot, maps, base, tli, foreign=skip)
    log.warning("rebuilt %d seat maps at %s (generation %s)", len(maps), consistent_point,
                generation)
    return maps, generation
