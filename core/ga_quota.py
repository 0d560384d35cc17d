"""The GA quota control plane (docs/general-admission.md#the-quota-plane).

A hot GA tier sells from several stripes so that holds do not queue on one row.
A hold takes from the stripe its id hashes to, and falls through to the others
(locking them all) only when that stripe has too few. The plane keeps the
fall-through rare: it spreads each tier's available places evenly over its active
stripes once one of them runs dry, and drains retired stripes. It moves only
``available`` counts, in one short transaction per tier (``onsale_ga_rebalance``), so
a tier's capacity is conserved at every instant; a plan that went stale is simply
not applied.

``plan_rebalance`` is the decision, pure; the rest is a thin adapter and its loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.kernel.dependency import is_outage

log = logging.getLogger("onsale.ga_quota")
LOCK_TIMEOUT_MS = 50  # a rebalance never keeps holds waiting longer than this


@dataclass(frozen=True)
class Stripe:
    stripe: int
    active: bool
    available: int


def plan_rebalance(stripes: Sequence[Stripe], *, low_water: int,
                   force: bool = False) -> dict[int, int]:
    """The moves (stripe → change of its available) that spread the tier's available
    places evenly over its active stripes (lower stripe numbers get the remainder) and
    empty its retired ones. ``{}`` when nothing needs moving: no retired stripe holds
    stock and no active stripe has run dry (fewer than ``low_water`` places, the most
    one hold may take) while another has more. ``force``: even out whatever the cause
    (an operator asked). The changes sum to zero."""
    active = sorted(s.stripe for s in stripes if s.active)
    if not active:
        return {}
    by_id = {s.stripe: s for s in stripes}
    total = sum(s.available for s in stripes)
    base, extra = divmod(total, len(active))
    target = {stripe: 0 for stripe in by_id}
    for i, stripe in enumerate(active):
        target[stripe] = base + (1 if i < extra else 0)
    if not force:
        retired_stock = any(not s.active and s.available > 0 for s in stripes)
        levels = [by_id[s].available for s in active]
        dry = min(levels) < low_water and max(levels) > min(levels) + 1
        if not (retired_stock or dry):
            return {}
    return {stripe: target[stripe] - s.available for stripe, s in sorted(by_id.items())
            if target[stripe] != s.available}


async def rebalance_tier(conn: Any, metrics: Metrics, event_id: int, tier_id: int, *,
                         reason: str = "low_water", force: bool = False) -> int:
    """Plan from an unlocked read and apply; the places moved (0: nothing to do, or
    skipped because the stripes were busy or the plan went stale)."""
    q = queries("ga")
    rows = await conn.fetch(q["stripes"], event_id, tier_id)
    if not rows:
        return 0
    plan = plan_rebalance([Stripe(r["stripe"], r["active"], r["available"]) for r in rows],
                          low_water=rows[0]["max_per_hold"], force=force)
    if not plan:
        return 0
    try:
        moved = int(await conn.fetchval(q["rebalance"], event_id, tier_id, list(plan),
                                        list(plan.values()), reason, LOCK_TIMEOUT_MS))
    except asyncpg.LockNotAvailableError:
        moved = -1
    if moved < 0:
        metrics.ga_rebalance_skipped.inc()
        return 0
    metrics.ga_rebalanced.inc(moved)
    return moved


async def rebalance_all(conn: Any, metrics: Metrics) -> int:
    """One pass over every GA tier of an event not yet started."""
    moved = 0
    for row in await conn.fetch(queries("ga")["tiers_to_watch"]):
        try:
            moved += await rebalance_tier(conn, metrics, row["event_id"], row["tier_id"])
        except asyncpg.PostgresError as exc:  # one tier's failure does not skip the others
            metrics.ga_rebalance_errors.inc()
            log.warning("rebalancing event %s tier %s failed: %s", row["event_id"],
                        row["tier_id"], exc)
    return moved


async def run_quota_plane(pool: Any, metrics: Metrics, interval: float) -> None:
    """Loop forever; outages are logged and counted, never fatal."""
    while True:
        try:
            async with pool.acquire() as conn:
                await rebalance_all(conn, metrics)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            metrics.ga_rebalance_errors.inc()
            if not is_outage(exc):
                log.warning("GA rebalance pass failed: %s", exc)
        await asyncio.sleep(interval)
