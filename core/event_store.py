"""Creating an event: layout, tiers, inventory and the venue document on its shard, the
catalogue row and the placement in the directory (docs/scaling.md#placing-an-event)."""

from __future__ import annotations

import asyncio
import gzip
import logging
from dataclasses import dataclass
from typing import Any

from onsale.core.draw_seed import commitment, new_seed
from onsale.core.event_rows import delete_rows, tables_on
from onsale.core.event_spec import EventSpec
from onsale.core.layout import generate, venue_document
from onsale.core.queries import queries
from onsale.kernel.beacon_chain import Chain, commitment_document
from onsale.kernel.progress import Progress, silent
from onsale.kernel.shards import ShardSet

log = logging.getLogger("onsale.events")
DIRECTORY_SHARD = 1  # the directory's own database


@dataclass(frozen=True)
class _Prepared:
    """What is computed before any transaction: the generated seats, and a random
    draw's seed with its commitment."""

    spec: EventSpec
    seats: list[Any]
    seed: str | None
    commitment: str | None
    beacon: dict[str, Any] | None  # the beacon round committed with the seed


async def _prepare(spec: EventSpec, beacon: Chain | None) -> _Prepared:
    # Half a second of CPU for 50,000 seats: in a thread, so that the event loop (and
    # every request, and every dependency timeout, in this process) keeps running.
    seats = (await asyncio.to_thread(generate, spec.seats, tiers=len(spec.tiers))
             if spec.seats else [])  # general admission only
    seed = new_seed() if spec.queue.policy == "random" else None
    if seed is None:
        return _Prepared(spec, seats, None, None, None)
    committed = None if beacon is None else commitment_document(
        beacon, spec.onsale_at.timestamp())
    return _Prepared(spec, seats, seed, commitment(seed), committed)


SEAT_CHUNK = 50_000


async def create_event(directory: Any, spec: EventSpec, *, shard_id: int = 1,
                       shard: Any = None, progress: Progress = silent,
                       beacon: Chain | None = None) -> int:
    """Create an event; its id comes from the directory's events identity.

    ``shard`` None: the event lives in the directory's own database (shard 1), and
    everything is one transaction on ``directory``. Otherwise ``shard`` is a connection
    to shard ``shard_id``, and the writes are ordered so that no crash leaves anything
    routable half-made (docs/scaling.md#placing-an-event): the shard's rows first, in a
    transaction of their own; then, in one directory transaction, the catalogue row,
    the draw's secret, the layout and the placement, which is the switch. A failure
    between the two deletes the shard's rows again; a crash there leaves them on the
    shard under an id no placement names and no other event will get.
    ``progress`` hears of each of the four steps (layout, seats, catalogue, statistics).
    ``beacon``: the chain whose round a random draw commits to (None: the seed alone).
    """
    p = await _prepare(spec, beacon)
    q = queries("events")
    seats = f"{len(p.seats):,} seats"
    async with directory.transaction():
        event_id: int = await directory.fetchval(q["next_event_id"])
        progress(f"event {event_id}: the venue layout", 0, 4)
        layout = await asyncio.to_thread(_venue, event_id, p.seats, _tiers(p.spec))
        progress(f"event {event_id}: {seats}", 1, 4)
        if shard is None:
            await _write_definition(directory, event_id, p, layout)
        else:
            async with shard.transaction():
                await _write_definition(shard, event_id, p, layout)
            progress(f"event {event_id}: statistics", 2, 4)
            await _analyze(shard, event_id)
            try:
                async with directory.transaction():  # a savepoint
                    await _insert_event(directory, event_id, p)
                    await _insert_layout(directory, event_id, layout)
                    await _write_catalogue(directory, event_id, p, shard_id)
            except BaseException:
                await _forget_on_shard(shard, event_id)
                raise
        progress(f"event {event_id}: the catalogue", 3 if shard is not None else 2, 4)
        if shard is None:
            await _write_catalogue(directory, event_id, p, shard_id)
    if shard is None:
        progress(f"event {event_id}: statistics", 3, 4)
        await _analyze(directory, event_id)
    progress(f"event {event_id}: done", 4, 4)
    return event_id


async def _write_definition(conn: Any, event_id: int, p: _Prepared,
                            layout: tuple[str, str, bytes]) -> None:
    """The event's inventory definition on its shard: the events row the SQL functions
    read, price tiers, seats and their inventory rows, GA tiers and stripes, the layout."""
    q = queries("events")
    spec = p.spec
    await _insert_event(conn, event_id, p)
    for tier_id, (name, price) in enumerate(spec.tiers, start=1):
        await conn.execute(q["insert_tier"], event_id, tier_id, name, price)
    # In chunks: each statement is bounded by the background statement timeout, and a
    # 500,000-seat venue in one COPY could pass it on a busy machine.
    ordered = sorted(p.seats, key=lambda s: s.seat_id)  # chunks of disjoint id ranges
    for start in range(0, len(ordered), SEAT_CHUNK):
        chunk = ordered[start:start + SEAT_CHUNK]
        await conn.copy_records_to_table(
            "seats",
            columns=["event_id", "seat_id", "section", "row_label", "number", "x", "y",
                     "tier_id", "rank"],
            records=[(event_id, s.seat_id, s.section, s.row_label, s.number, s.x, s.y,
                      s.tier_id, s.rank) for s in chunk],
        )
        await conn.execute(q["fill_inventory"], event_id, chunk[0].seat_id,
                           chunk[-1].seat_id)
    for ga_id, ga in enumerate(spec.ga_tiers, start=1):
        await conn.execute(q["insert_ga_tier"], event_id, ga_id, ga.name, ga.price_minor,
                           ga.capacity, ga.max_per_hold, ga.max_per_account, ga.stripes)
        await conn.execute(q["insert_ga_buckets"], event_id, ga_id,
                           list(range(ga.stripes)), split(ga.capacity, ga.stripes))
    await _insert_layout(conn, event_id, layout)


async def _insert_event(conn: Any, event_id: int, p: _Prepared) -> None:
    spec = p.spec
    await conn.execute(
        queries("events")["insert_event"], event_id, spec.name, spec.venue_name,
        spec.starts_at, spec.onsale_at, spec.currency, spec.hold_ttl_seconds,
        spec.max_tickets_per_account, spec.max_seats_per_hold, len(p.seats),
        spec.queue.policy, spec.queue.prequeue_at, spec.queue.admission_rate_min,
        spec.queue.admission_rate_max, spec.queue.active_cap, spec.queue.pow_difficulty,
        p.commitment, p.beacon, spec.time_zone)


def _tiers(spec: EventSpec) -> list[dict[str, Any]]:
    return [{"tier_id": i, "name": name, "price_minor": price}
            for i, (name, price) in enumerate(spec.tiers, start=1)]


async def _insert_layout(conn: Any, event_id: int, layout: tuple[str, str, bytes]) -> None:
    """The venue document: on the event's shard (the event document names its hash)
    and in the directory (the layout routes read it there). It never changes, and its
    hash is its content's, so the two copies cannot disagree."""
    body, etag, packed = layout
    await conn.execute(queries("events")["insert_layout"], event_id, etag, body, packed)


async def _write_catalogue(conn: Any, event_id: int, p: _Prepared, shard_id: int) -> None:
    """The directory's part besides the events row: the draw's secret, the placement."""
    q = queries("events")
    if p.seed is not None and p.commitment is not None:
        await conn.execute(q["insert_draw_secret"], event_id, p.seed, p.commitment, p.beacon)
    await conn.execute(q["place_event"], event_id, shard_id)


async def _analyze(conn: Any, event_id: int) -> None:
    # Fresh statistics before the first hold: a sale can open right after
    # creation, long before autovacuum would analyze the new rows. The event
    # exists either way; a failed ANALYZE is left to autovacuum.
    try:
        async with conn.transaction():  # a savepoint when the caller holds a transaction
            await conn.execute(queries("events")["analyze_inventory"])
    except Exception as exc:  # logged, not fatal
        log.warning("ANALYZE after creating event %s failed: %s", event_id, exc)


async def _forget_on_shard(shard: Any, event_id: int) -> None:
    """Undo the shard's part of a create whose directory part failed (best effort: a
    remnant is unrouted either way)."""
    try:
        async with shard.transaction():
            await delete_rows(shard, event_id, tables_on(shard_is_directory=False))
    except Exception as exc:  # logged: the remnant has an id no placement names
        log.warning("could not remove event %s's rows from its shard: %s", event_id, exc)


def split(capacity: int, stripes: int) -> list[int]:
    """A tier's capacity over its stripes, as evenly as it goes (the first stripes
    get the remainder): ``split(10, 4) == [3, 3, 2, 2]``."""
    base, extra = divmod(capacity, stripes)
    return [base + (1 if i < extra else 0) for i in range(stripes)]


def _venue(event_id: int, seats: Any, tiers: list[dict[str, Any]]) -> tuple[str, str, bytes]:
    body, etag = venue_document(event_id, seats, tiers)
    return body, etag, gzip.compress(body.encode(), compresslevel=9, mtime=0)


async def sync_event_copy(directory: Any, shards: ShardSet, event_id: int) -> None:
    """Bring the event's shard's copy of its events row up to the directory's, after
    the directory's changed (the waiting room's settings, the draw's commitment or
    seed): the event document is read on the shard. Call it after the directory's
    transaction commits. It reads the placement from the directory, not the cached
    copy, and copies the directory's values as they are, so it converges whatever runs
    concurrently (another change, a move). The hold functions read none of these
    columns (docs/scaling.md#placing-an-event)."""
    q = queries("events")
    shard_id = await directory.fetchval(q["event_shard"], event_id)
    if shard_id is None or shard_id == DIRECTORY_SHARD:
        return  # not placed, or in the directory's own database: one row
    row = await directory.fetchval(q["event_row"], event_id)
    async with shards.database(shard_id).connection() as conn:
        await conn.execute(q["sync_queue_columns"], event_id, row)


async def commit_draw_seed(conn: Any, event_id: int, beacon: Chain | None = None) -> None:
    """Choose the seed of the event's random draw and publish its commitment, with the
    first round of ``beacon`` due after the sale opens (once: an event keeps its first
    seed whatever its policy becomes)."""
    q = queries("events")
    seed = new_seed()
    committed = None
    if beacon is not None:
        onsale_at = await conn.fetchval(q["onsale_at"], event_id)
        committed = commitment_document(beacon, onsale_at.timestamp())
    await conn.execute(q["insert_draw_secret"], event_id, seed, commitment(seed), committed)
