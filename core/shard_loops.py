"""The background loops of every shard (docs/scaling.md#routing): the expiry sweeper,
the GA quota plane, the sale figures (core/sale_figures.py), the payment reconciler, the
outbox relay and the failover resume (core/failover.py) each run once per
shard, on a pool of that shard, so a shard that is down stops only its own loops and
each one's work is one transaction on one shard. A shard listed later gets its loops
within ``SUPERVISE_SECONDS`` (the placement reload opens its request pool first).

The ticket consumer is one per process: it reads the one outbox stream that every
shard's relay publishes into, and issues an order's tickets on the shard its id names.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from onsale.core.failover import run_resume
from onsale.core.ga_quota import run_quota_plane
from onsale.core.metrics import Metrics
from onsale.core.outbox_relay import run_relay
from onsale.core.payments import Payments
from onsale.core.reconciler import run_reconciler
from onsale.core.sale_figures import run_sale_figures
from onsale.core.sweeper import run_sweeper
from onsale.core.tickets import run_ticket_consumer
from onsale.kernel.config import Settings
from onsale.kernel.db import create_pool
from onsale.kernel.shards import ShardSet
from onsale.kernel.tasks import stop_background
from onsale.kernel.valkey import RedisClient

log = logging.getLogger("onsale.shard_loops")
SUPERVISE_SECONDS = 2.0


@dataclass(frozen=True)
class LoopParts:
    """What every shard's loops share."""

    settings: Settings
    metrics: Metrics
    payments: Payments | None  # None: no provider, no reconciler
    redis: RedisClient | None  # blocking reads; None: no relay, no ticket consumer
    # True where the shards' pools have request bounds (one process serves the API and
    # runs the loops, onsale dev): each shard's loops then get a small pool of their own
    # with the background bounds, as the directory's do (``first_pool``).
    own_pools: bool = False


class ShardLoops:
    """The running loops, by shard, and the background pool each uses."""

    def __init__(self, shards: ShardSet, parts: LoopParts, first_pool: Any) -> None:
        self.shards, self.parts = shards, parts
        self.pools: dict[int, Any] = {1: first_pool}  # shard id -> asyncpg pool
        self.tasks: dict[int, list[asyncio.Task[None]]] = {}
        self._opened: list[Any] = []

    def pool_of(self, made: uuid.UUID) -> Any:
        """The background pool of the shard that made an id; None if not running here."""
        shard_id = self.shards.placement.shard_of_id(made)
        return None if shard_id is None else self.pools.get(shard_id)

    async def start_new(self) -> None:
        """Start the loops of every shard that has none yet."""
        for shard_id, db in list(self.shards.pools.items()):
            if shard_id in self.tasks:
                continue
            if shard_id not in self.pools:
                if self.parts.own_pools:
                    pool = await create_pool(dataclasses.replace(
                        self.parts.settings, database_url=db.dsn or "",
                        db_pool_min=1, db_pool_max=3), request_path=False)
                    self._opened.append(pool)
                else:
                    pool = db.pool
                self.pools[shard_id] = pool
            self.tasks[shard_id] = self._start(shard_id, self.pools[shard_id])
            log.info("background loops started on shard %d", shard_id)

    def _start(self, shard_id: int, pool: Any) -> list[asyncio.Task[None]]:
        p, s = self.parts, self.parts.settings
        metrics = p.metrics.for_shard(shard_id)  # its figures carry its shard
        tasks = [
            asyncio.create_task(run_sweeper(pool, metrics, s.sweep_interval, s.sweep_batch),
                                name=f"onsale-sweeper-{shard_id}"),
            asyncio.create_task(run_quota_plane(pool, metrics, s.ga_rebalance_interval),
                                name=f"onsale-ga-quota-{shard_id}"),
            asyncio.create_task(run_sale_figures(pool, metrics),
                                name=f"onsale-sale-figures-{shard_id}"),
        ]
        payments = (p.payments.on(self.shards.pools[shard_id], metrics)
                    if p.payments is not None else None)
        if payments is not None:
            tasks.append(asyncio.create_task(run_reconciler(payments, s.reconcile_interval),
                                             name=f"onsale-reconciler-{shard_id}"))
        directory = None if shard_id == 1 else self.pools[1]
        tasks.append(asyncio.create_task(run_resume(pool, payments, s, directory),
                                         name=f"onsale-resume-{shard_id}"))
        if p.redis is not None:
            tasks.append(asyncio.create_task(
                run_relay(pool, p.redis, metrics, stream_maxlen=s.outbox_stream_maxlen,
                          retention_seconds=s.outbox_retention_seconds, crash_at=s.crash_at),
                name=f"onsale-outbox-relay-{shard_id}"))
        return tasks

    async def close(self) -> None:
        for tasks in self.tasks.values():
            await stop_background(tasks)
        self.tasks.clear()
        for pool in self._opened:
            with contextlib.suppress(Exception):
                await pool.close()


async def run_shard_loops(shards: ShardSet, parts: LoopParts, first_pool: Any) -> None:
    """Run every shard's loops, and the ticket consumer, until cancelled."""
    loops = ShardLoops(shards, parts, first_pool)
    consumer: list[asyncio.Task[None]] = []
    try:
        if parts.redis is not None:
            consumer.append(asyncio.create_task(
                run_ticket_consumer(first_pool, parts.redis, parts.metrics,
                                    pool_of=loops.pool_of),
                name="onsale-ticket-consumer"))
        while True:
            try:
                await loops.start_new()
            except Exception:  # a shard's pool cannot open now: try again next round
                log.warning("starting a shard's background loops failed", exc_info=True)
            await asyncio.sleep(SUPERVISE_SECONDS)
    finally:
        await stop_background(consumer)
        await loops.close()
