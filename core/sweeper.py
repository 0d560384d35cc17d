"""The expiry sweeper: releases expired holds in batches with the hold predicate.

Correctness never depends on it running on time: the claim predicate already
treats an expired hold as free. It tidies up, feeds the seat map, and reports
its backlog.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.kernel.dependency import is_outage

log = logging.getLogger("onsale.sweeper")
IDEMPOTENCY_RETENTION_SECONDS = 24 * 3600
PRUNE_EVERY_SECONDS = 60.0
PRUNE_BATCH = 10_000


@dataclass(frozen=True)
class SweepResult:
    holds_expired: int
    seats_released: int


async def sweep_once(conn: Any, batch: int) -> SweepResult:
    """Sweep until a batch comes back short (or nothing is left)."""
    q = queries("holds")
    holds = seats = 0
    while True:
        row = await conn.fetchrow(q["sweep"], batch)
        holds += row["holds_expired"]
        seats += row["seats_released"]
        if row["holds_expired"] < batch:
            await conn.execute(q["close_abandoned_orders"])
            return SweepResult(holds, seats)


async def update_backlog(conn: Any, metrics: Metrics) -> None:
    row = await conn.fetchrow(queries("holds")["sweep_backlog"])
    metrics.sweeper_backlog.set(row["backlog"])
    metrics.oldest_overdue.set(row["oldest_age"])


async def prune_idempotency(conn: Any, retention_seconds: float = IDEMPOTENCY_RETENTION_SECONDS,
                            batch: int = PRUNE_BATCH) -> int:
    """Delete idempotency records past retention, in batches. Returns rows deleted."""
    q = queries("holds")
    total = 0
    while True:
        status = await conn.execute(q["prune_idempotency"], retention_seconds, batch)
        deleted = int(status.split()[-1])
        total += deleted
        if deleted < batch:
            return total


async def run_sweeper(pool: Any, metrics: Metrics, interval: float, batch: int) -> None:
    """Loop forever; outages are logged and counted, never fatal."""
    loop = asyncio.get_running_loop()
    next_prune = loop.time()
    while True:
        try:
            async with pool.acquire() as conn:
                result = await sweep_once(conn, batch)
                metrics.swept_seats.inc(result.seats_released)
                await update_backlog(conn, metrics)
                if loop.time() >= next_prune:
                    await prune_idempotency(conn)
                    next_prune = loop.time() + PRUNE_EVERY_SECONDS
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # outages and bugs alike: log, count, keep sweeping
            metrics.sweeper_errors.inc()
            if not is_outage(exc):  # an outage: its breaker said so once already
                log.warning("sweep failed: %s", exc)
        await asyncio.sleep(interval)
