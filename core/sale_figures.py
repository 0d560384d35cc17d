"""The sale's own figures, per event and per shard (docs/operations.md#the-sales-figures):
what seed 000 judges a sale by besides request outcomes. One loop per shard (core/
shard_loops.py) reads them every ``INTERVAL`` seconds into gauges:

- seats sold, seats in holds or payment, and GA places sold, per event;
- paid orders whose tickets are not all issued a minute after the capture.

The others are counted where they happen: lock waits (``onsale_hold_lock_wait_seconds``),
conditional conflicts (``onsale_hold_outcomes_total{code="seats_unavailable"}``), expired
holds (``onsale_sweeper_released_seats_total``), payments in doubt
(``onsale_payment_oldest_unknown_seconds``), queue and admissions (edge/metrics.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.kernel.dependency import is_outage

log = logging.getLogger("onsale.sale_figures")
INTERVAL = 15.0
MAX_EVENTS = 200
TICKETS_AFTER_SECONDS = 60


async def read_figures(conn: Any, metrics: Metrics) -> None:
    q = queries("sale_figures")
    for row in await conn.fetch(q["sold_by_event"], MAX_EVENTS):
        event = str(row["event_id"])
        metrics.event_sold.labels(event=event, kind="seats").set(row["seats_sold"])
        metrics.event_sold.labels(event=event, kind="places").set(row["places_sold"])
        metrics.event_held.labels(event=event).set(row["seats_held"])
    metrics.tickets_unreconciled.set(
        await conn.fetchval(q["tickets_unreconciled"], TICKETS_AFTER_SECONDS))


async def run_sale_figures(pool: Any, metrics: Metrics, interval: float = INTERVAL) -> None:
    """Forever; an outage is its breaker's to log, anything else once per pass."""
    while True:
        try:
            async with pool.acquire() as conn:
                await read_figures(conn, metrics)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not is_outage(exc):
                log.warning("reading the sale figures failed: %s", exc)
        await asyncio.sleep(interval)
