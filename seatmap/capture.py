"""The change capture of a process: one consumer per shard (seatmap/cdc.py), each a task
of its own, so a shard whose server is down stops only its own consumer, which retries
with backoff and resumes when the server is back.

The shard list and the placement come from the directory (``DATABASE_URL``) on a
connection of this supervisor's own: it LISTENs on ``onsale_placement`` (a placement
change) and reads everything again every ``ONSALE_SEATMAP_SHARD_RELOAD_S`` (a shard
added by ``onsale shard add`` notifies nothing). What to start, stop and rebuild is
decided by seatmap/shard_plan.py; while the directory does not answer, the consumers
that run keep running, and at start shard 1's runs alone until it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import asyncpg

from onsale.kernel.placement import Placement, ShardRow
from onsale.kernel.shards import load_placement
from onsale.kernel.tasks import stop_background, to_the_end
from onsale.kernel.valkey import RedisClient
from onsale.seatmap.cdc import Consumer
from onsale.seatmap.config import SeatmapSettings, shard_numbers
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.shard_plan import Target, foreign, plan, targets

log = logging.getLogger("onsale.seatmap.cdc")
CHANNEL = "onsale_placement"


@dataclass
class Running:
    target: Target
    consumer: Consumer
    task: asyncio.Task[None]


class Capture:
    """Every shard's consumer in this process; what ``running_capture`` yields."""

    def __init__(self, directory_url: str, redis: RedisClient, settings: SeatmapSettings,
                 metrics: SeatmapMetrics) -> None:
        self.directory_url = directory_url
        self.redis = redis
        self.settings = settings
        self.metrics = metrics
        self.placement = Placement({1: ShardRow(1, "")})
        self.running: dict[int, Running] = {}
        self._read: Placement | None = None  # the last placement read from the directory
        self._changed = asyncio.Event()
        self._stopping: set[asyncio.Task[None]] = set()

    @property
    def active(self) -> bool:
        """Whether this process streams at least one shard's slot."""
        return any(r.consumer.active for r in self.running.values())

    def shards(self) -> dict[str, bool]:
        """Each shard's consumer here: streaming (True) or standing by."""
        return {str(s): r.consumer.active for s, r in sorted(self.running.items())}

    def consumer(self, shard_id: int) -> Consumer:
        return self.running[shard_id].consumer

    async def run(self) -> None:
        """Start the consumers, then follow the directory until cancelled."""
        self.apply(self.placement, read=False)  # shard 1 at once, before the directory answers
        listener: Any = None
        try:
            while True:
                if listener is None or listener.is_closed():
                    listener = await self._listen()
                try:
                    async with asyncpg_connection(self.directory_url) as conn:
                        self.apply(await load_placement(conn))
                except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
                    log.warning("cannot read the shard list (consumers run on): %r", exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), self.settings.shard_reload_s)
                self._changed.clear()
        finally:
            # The consumers first, and to the end: cancelled again while closing the
            # listener (stop_background re-cancels each second), a consumer left running
            # would fight the next one for its slot's generation.
            await to_the_end(self._shut_down(listener))

    async def _shut_down(self, listener: Any) -> None:
        await self.stop()
        if listener is not None:
            with contextlib.suppress(Exception):
                await listener.close()

    def apply(self, placement: Placement, *, read: bool = True) -> None:
        """Bring the consumers in line with ``placement`` (shard_plan.plan); ``read``:
        it was read from the directory (moves are found between two such readings)."""
        wanted = targets(placement.shards, self.directory_url, self.settings.replication_url,
                         shard_numbers(self.settings.shards))
        running = {s: r.target for s, r in self.running.items()}
        steps = plan(running, wanted, self._read, placement)
        self.placement = placement
        if read:
            self._read = placement
        for shard_id in steps.stop:
            gone = self.running.pop(shard_id)
            gone.task.cancel()
            self._stopping.add(gone.task)
            gone.task.add_done_callback(self._stopping.discard)
            log.info("seat-map consumer of shard %d stopped (shard list changed)", shard_id)
        for target in steps.start:
            self._start(target)
        for shard_id, events in steps.rebuild.items():
            self.running[shard_id].consumer.request_rebuild(
                f"event {events[0]} moved to this shard")

    def _start(self, target: Target) -> None:
        shard_id = target.shard_id

        def skip(event_id: int) -> bool:
            return foreign(event_id, shard_id, self.placement)

        consumer = Consumer(target.dsn, self.redis, self.settings, self.metrics,
                            shard_id=shard_id, replication_url=target.replication_dsn,
                            skip=skip)
        task = asyncio.create_task(consumer.run(), name=f"onsale-seatmap-cdc-{shard_id}")
        self.running[shard_id] = Running(target, consumer, task)
        log.info("seat-map consumer of shard %d started on slot %s", shard_id,
                 consumer.settings.slot)

    async def stop(self) -> None:
        tasks = [r.task for r in self.running.values()] + list(self._stopping)
        self.running.clear()
        await stop_background(tasks)

    async def _listen(self) -> Any:
        """A connection that LISTENs for placement changes; None while the directory does
        not answer (the periodic reload still runs)."""
        try:
            conn = await asyncpg.connect(self.directory_url, timeout=5)
            await conn.add_listener(CHANNEL, lambda *_: self._changed.set())
        except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
            log.warning("cannot listen for placement changes: %r", exc)
            return None
        return conn


@contextlib.asynccontextmanager
async def asyncpg_connection(url: str) -> Any:
    conn = await asyncpg.connect(url, timeout=5)
    try:
        yield conn
    finally:
        await conn.close()
