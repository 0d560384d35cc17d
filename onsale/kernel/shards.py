"""The shards of one process (docs/scaling.md#routing): a bounded pool per shard, each
with its own circuit breaker, and the directory's placement cached in memory. A change
of placement is NOTIFYed on ``onsale_placement`` and reloaded; an event the cache has
not seen yet costs one directory read, counted in ``directory_reads``; nothing else on
a request's path reads the directory."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from onsale.kernel.config import Settings
from onsale.kernel.db import Database, create_pool
from onsale.kernel.placement import Placement, ShardRow
from onsale.kernel.problems import Problem

log = logging.getLogger("onsale.shards")
_REFRESH_SECONDS = 30.0  # a missed notification (a lost listener) is caught up by then


async def load_placement(conn: Any) -> Placement:
    """The shard list and every event's placement, from the directory."""
    shards = {
        r["shard_id"]: ShardRow(r["shard_id"], r["dsn"], r["state"], r["epoch"],
                                r["stamped_ms"])
        for r in await conn.fetch(
            """SELECT shard_id, dsn, state, epoch,
                      (extract(epoch FROM stamped_since) * 1000)::bigint AS stamped_ms
               FROM shards ORDER BY shard_id""")
    }
    events = {r["event_id"]: r["shard_id"]
              for r in await conn.fetch("SELECT event_id, shard_id FROM event_placement")}
    return Placement(shards, events)


class ShardSet:
    def __init__(self, directory: Database, placement: Placement,
                 pools: dict[int, Database], *, request_path: bool = True) -> None:
        self.directory = directory
        self.placement = placement
        self.pools = pools  # shard id -> its Database; the directory's own is shard 1's
        self.request_path = request_path  # the bounds of the pools opened for others
        self.directory_reads = 0  # on a request's path: an event the cache had not seen
        self.reloads = 0  # in the background: at start, on NOTIFY, every 30 s

    def database(self, shard_id: int) -> Database:
        found = self.pools.get(shard_id)
        if found is None:
            raise Problem(503, "inventory_unavailable",
                          detail="This event's database is not open in this process yet; "
                                 "retry in a moment.")
        return found

    async def for_event(self, event_id: int) -> Database:
        """The event's shard; an event not placed anywhere is not found."""
        shard_id = self.placement.shard_of_event(event_id)
        if shard_id is None:
            shard_id = await self._read_placement(event_id)
        if shard_id is None:
            raise Problem(404, "event_not_found")
        return self.database(shard_id)

    def for_id(self, value: uuid.UUID, missing: str) -> Database:
        """The shard that made a hold, order, payment operation or ticket id; an id no
        shard made is ``missing`` (a 404 code)."""
        shard_id = self.placement.shard_of_id(value)
        if shard_id is None:
            raise Problem(404, missing)
        return self.database(shard_id)

    async def _read_placement(self, event_id: int) -> int | None:
        self.directory_reads += 1
        async with self.directory.connection() as conn:
            shard_id = await conn.fetchval(
                "SELECT shard_id FROM event_placement WHERE event_id = $1", event_id)
        if shard_id is not None:
            self.placement = self.placement.with_event(event_id, shard_id)
        return shard_id  # type: ignore[no-any-return]

    async def refresh(self, settings: Settings, stack: contextlib.AsyncExitStack) -> None:
        """Reload the placement; open a pool for a shard listed since."""
        self.reloads += 1
        async with self.directory.connection() as conn:
            placement = await load_placement(conn)
        for shard_id, row in placement.shards.items():
            if shard_id not in self.pools and row.dsn:
                self.pools[shard_id] = await open_shard(settings, row.dsn, stack,
                                                        request_path=self.request_path)
        self.placement = placement


async def shard_readiness(shards: ShardSet) -> dict[str, str]:
    """Each shard's answer to ``SELECT 1``: "ok", or "unavailable" (its breaker open,
    no connection, or no answer within the request bounds)."""

    async def one(db: Database) -> str:
        try:
            async with db.connection() as conn:
                await conn.fetchval("SELECT 1")
        except Problem:
            return "unavailable"
        return "ok"

    ids = sorted(shards.pools)
    answers = await asyncio.gather(*(one(shards.pools[i]) for i in ids))
    return {str(i): a for i, a in zip(ids, answers, strict=True)}


async def open_shard(settings: Settings, dsn: str, stack: contextlib.AsyncExitStack, *,
                     request_path: bool = True) -> Database:
    """A pool on another shard, bounded as the directory's is."""
    pool = await create_pool(dataclasses.replace(settings, database_url=dsn,
                                                 db_pool_min=min(1, settings.db_pool_min)),
                             request_path=request_path)
    stack.push_async_callback(pool.close)
    return Database.from_settings(pool, dataclasses.replace(settings, database_url=dsn))


@contextlib.asynccontextmanager
async def running_shards(settings: Settings, directory: Database, *,
                         request_path: bool = True) -> AsyncIterator[ShardSet]:
    """The process's shards, kept current: a listener on the directory for placement
    changes, and a full reload every 30 s in case a notification was missed."""
    async with contextlib.AsyncExitStack() as stack:
        shards = ShardSet(directory, Placement({1: ShardRow(1, "")}), {1: directory},
                          request_path=request_path)
        try:
            await shards.refresh(settings, stack)
        except Exception:  # the directory is down at start: shard 1 alone until it answers
            log.warning("cannot read the shard list yet", exc_info=True)
        changed = asyncio.Event()

        def notified(*_: Any) -> None:
            changed.set()

        listener = await _listen(settings, notified)
        if listener is not None:
            stack.push_async_callback(listener.close)

        async def keep_current() -> None:
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), _REFRESH_SECONDS)
                changed.clear()
                try:
                    await shards.refresh(settings, stack)
                except Exception:  # the directory is down: keep the last placement
                    log.warning("placement refresh failed", exc_info=True)

        task = asyncio.create_task(keep_current(), name="onsale-placement")
        try:
            yield shards
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _listen(settings: Settings, notified: Any) -> Any:
    """A connection of its own that LISTENs on ``onsale_placement``; None when the
    directory cannot be reached now (the periodic reload still runs)."""
    import asyncpg

    try:
        conn = await asyncpg.connect(settings.database_url, timeout=5)
        await conn.add_listener("onsale_placement", notified)
    except (OSError, asyncpg.PostgresError, TimeoutError):
        log.warning("cannot listen for placement changes", exc_info=True)
        return None
    return conn
