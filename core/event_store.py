"""Creating an event: layout, tiers, inventory, and the venue document, in one transaction."""

from __future__ import annotations

import asyncio
import gzip
import logging
from typing import Any

from onsale.core.draw_seed import commitment, new_seed
from onsale.core.event_spec import EventSpec
from onsale.core.layout import generate, venue_document
from onsale.core.queries import queries

log = logging.getLogger("onsale.events")


async def create_event(conn: Any, spec: EventSpec) -> int:
    q = queries("events")
    # Half a second of CPU for 50,000 seats: in a thread, so that the event loop (and
    # every request, and every dependency timeout, in this process) keeps running.
    seats = (await asyncio.to_thread(generate, spec.seats, tiers=len(spec.tiers))
             if spec.seats else [])  # general admission only
    async with conn.transaction():
        event_id: int = await conn.fetchval(
            q["insert_event"], spec.name, spec.venue_name, spec.starts_at, spec.onsale_at,
            spec.currency, spec.hold_ttl_seconds, spec.max_tickets_per_account,
            spec.max_seats_per_hold, len(seats), spec.queue.policy, spec.queue.prequeue_at,
            spec.queue.admission_rate_min, spec.queue.admission_rate_max, spec.queue.active_cap,
            spec.queue.pow_difficulty,
        )
        await conn.execute(q["place_event_here"], event_id)
        if spec.queue.policy == "random":
            await commit_draw_seed(conn, event_id)
        tiers = []
        for tier_id, (name, price) in enumerate(spec.tiers, start=1):
            await conn.execute(q["insert_tier"], event_id, tier_id, name, price)
            tiers.append({"tier_id": tier_id, "name": name, "price_minor": price})
        await conn.copy_records_to_table(
            "seats",
            columns=["event_id", "seat_id", "section", "row_label", "number", "x", "y",
                     "tier_id", "rank"],
            records=[(event_id, s.seat_id, s.section, s.row_label, s.number, s.x, s.y,
                      s.tier_id, s.rank) for s in seats],
        )
        await conn.execute(q["fill_inventory"], event_id)
        for ga_id, ga in enumerate(spec.ga_tiers, start=1):
            await conn.execute(q["insert_ga_tier"], event_id, ga_id, ga.name, ga.price_minor,
                               ga.capacity, ga.max_per_hold, ga.max_per_account, ga.stripes)
            await conn.execute(q["insert_ga_buckets"], event_id, ga_id,
                               list(range(ga.stripes)), split(ga.capacity, ga.stripes))
        body, etag, packed = await asyncio.to_thread(_venue, event_id, seats, tiers)
        await conn.execute(q["insert_layout"], event_id, etag, body, packed)
    # Fresh statistics before the first hold: a sale can open right after
    # creation, long before autovacuum would analyze the new rows. The event
    # exists either way; a failed ANALYZE is left to autovacuum.
    try:
        async with conn.transaction():  # a savepoint when the caller holds a transaction
            await conn.execute(q["analyze_inventory"])
    except Exception as exc:  # logged, not fatal
        log.warning("ANALYZE after creating event %s failed: %s", event_id, exc)
    return event_id


def split(capacity: int, stripes: int) -> list[int]:
    """A tier's capacity over its stripes, as evenly as it goes (the first stripes
    get the remainder): ``split(10, 4) == [3, 3, 2, 2]``."""
    base, extra = divmod(capacity, stripes)
    return [base + (1 if i < extra else 0) for i in range(stripes)]


def _venue(event_id: int, seats: Any, tiers: list[dict[str, Any]]) -> tuple[str, str, bytes]:
    body, etag = venue_document(event_id, seats, tiers)
    return body, etag, gzip.compress(body.encode(), compresslevel=9, mtime=0)


async def commit_draw_seed(conn: Any, event_id: int) -> None:
    """Choose the seed of the event's random draw and publish its commitment
    (once: an event keeps its first seed whatever its policy becomes)."""
    seed = new_seed()
    await conn.execute(queries("events")["insert_draw_secret"], event_id, seed, commitment(seed))
