"""Reading venue layouts: from the process's cache, else from PostgreSQL on a small
pool of their own, one read per (event, representation) however many ask at once.

The layout pool is not the request pool that holds use: a flood of layout reads
(a cold process, many events, a slow database) waits for, or is refused by, these
few connections and never takes one a hold would have used (docs/architecture.md#the-venue-layout).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass

from onsale.core.queries import queries
from onsale.core.venue_cache import LayoutCache
from onsale.kernel.config import Settings
from onsale.kernel.db import Database, create_pool
from onsale.kernel.single_flight import SingleFlight

# Connections of the layout pool in each process that serves core's API (opened only
# when a layout is read; a read is one short statement).
LAYOUT_POOL_MAX = 2


@dataclass(frozen=True)
class Layout:
    """One representation of an event's layout: its hash and its bytes (shared)."""

    layout_hash: str
    body: bytes


class VenueLayouts:
    def __init__(self, db: Database, cache: LayoutCache | None = None) -> None:
        self.db = db
        self.cache = cache or LayoutCache()
        self._reads: SingleFlight[tuple[int, bool], Layout | None] = SingleFlight()

    def known_hash(self, event_id: int) -> str | None:
        """The event's layout hash if this process has learnt it (no I/O)."""
        return self.cache.hash_of(event_id)

    async def layout(self, event_id: int, gzipped: bool) -> Layout | None:
        """The representation asked for; None: no such event."""
        found = self._cached(event_id, gzipped)
        if found is not None:
            return found
        return await self._reads.run((event_id, gzipped), lambda: self._read(event_id, gzipped))

    def _cached(self, event_id: int, gzipped: bool) -> Layout | None:
        layout_hash = self.cache.hash_of(event_id)
        if layout_hash is None:
            return None
        body = self.cache.body(layout_hash, gzipped)
        return None if body is None else Layout(layout_hash, body)

    async def _read(self, event_id: int, gzipped: bool) -> Layout | None:
        # Only the representation being sent (the JSON is 1.7 MB for 50,000 seats).
        q = queries("events")["layout_gzip" if gzipped else "layout_json"]
        async with self.db.connection() as conn:
            row = await conn.fetchrow(q, event_id)
        if row is None:
            return None  # not remembered: the event may be created later
        layout_hash: str = row["etag"]
        raw = row["body"]
        body = raw.encode() if isinstance(raw, str) else bytes(raw)
        self.cache.learn(event_id, layout_hash)
        return Layout(layout_hash, self.cache.keep(layout_hash, gzipped, body))


@contextlib.asynccontextmanager
async def running_venues(settings: Settings) -> AsyncIterator[VenueLayouts]:
    """The layout reader with its own pool: request statement bounds, at most
    LAYOUT_POOL_MAX connections, none opened before the first read."""
    pool = await create_pool(
        dataclasses.replace(settings, db_pool_min=0, db_pool_max=LAYOUT_POOL_MAX),
        application_name="onsale-core-venue")
    try:
        yield VenueLayouts(Database.from_settings(pool, settings))
    finally:
        await pool.close()
