"""Resuming a shard after a failover (docs/operations.md#failover).

Patroni elects the new primary; onsale decides when its sale may go on. A promotion
starts a new PostgreSQL timeline, and from then until the resume below has run,
``onsale_shard_serving()`` refuses new holds and checkouts on that shard (503
``inventory_unavailable``) and the core health report calls the shard unhealthy, so the
admitter pauses its events (queued visitors keep their place) and, once it is healthy
again, restarts admission at the minimum rate. Reads, replays and the queue go on.

The worker runs the steps on the new primary, in order, each idempotent, so a crash at
any point means running them all again:

1. ``seatmap``: the seat map's change capture is streaming from its slot on this
   primary again (a slot the failover lost is rebuilt by the consumer, which tells every
   client to refetch);
2. ``reconcile``: every payment operation in doubt is made due and reconciled once, so
   no seat is released or sold on a guess (a PAYMENT_PENDING seat is never released by
   the outage itself: nothing here releases anything);
3. ``audit``: ``onsale audit`` on the shard; a violation keeps the shard paused and is
   logged at error level for an operator;
4. ``serve``: the shard records the new timeline (``shard_identity.timeline``, and the
   directory's epoch for it), and holds resume.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from onsale.core.audit import format_report, run_audit, violations
from onsale.core.payments import Payments, crash_point
from onsale.core.reconciler import reconcile_once
from onsale.kernel.config import Settings

log = logging.getLogger("onsale.failover")
STEPS = ("seatmap", "reconcile", "audit", "serve")
CHECK_SECONDS = 1.0
SLOT_WAIT_SECONDS = 30.0

_TIMELINES = """SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
           AS current,
       coalesce((SELECT timeline FROM shard_identity), 1) AS resumed,
       (SELECT shard_id FROM shard_identity) AS shard_id"""


def steps_to_run(current: int, resumed: int) -> tuple[str, ...]:
    """Every step when the primary's timeline is above the one last resumed on; none
    otherwise (a timeline never goes back: a lower one is not this shard's primary)."""
    return STEPS if current > resumed else ()


@dataclass(frozen=True)
class Resumed:
    shard_id: int
    timeline: int
    seconds: float
    audit_violations: int


async def resume_if_failed_over(pool: Any, payments: Payments | None, settings: Settings,
                                directory: Any | None = None) -> Resumed | None:
    """Run the resume steps when this shard has failed over since its last resume.
    ``pool``: the shard's background pool; ``directory``: the directory's pool, whose
    shard list gets the new epoch (None: this database is the directory)."""
    async with pool.acquire() as conn:
        row = await conn.fetchrow(_TIMELINES)
    current, resumed = int(row["current"]), int(row["resumed"])
    shard_id = int(row["shard_id"] or 1)
    if not steps_to_run(current, resumed):
        return None
    started = time.monotonic()
    log.warning("shard %d is on timeline %d, last resumed on %d: a failover; resuming",
                shard_id, current, resumed)
    await _seatmap(pool, shard_id)
    crash_point(settings, "resume_after_seatmap")
    if payments is not None:
        await _reconcile(pool, payments)
    crash_point(settings, "resume_after_reconcile")
    async with pool.acquire() as conn:
        results = await run_audit(conn)
    found = violations(results)
    crash_point(settings, "resume_after_audit")
    if found:
        log.error("shard %d stays paused after its failover: the audit found %d "
                  "violation(s)\n%s", shard_id, found, format_report(results))
        return Resumed(shard_id, current, time.monotonic() - started, found)
    async with pool.acquire() as conn:
        await conn.execute("UPDATE shard_identity SET timeline = $1 WHERE timeline < $1",
                           current)
    target = directory or pool
    async with target.acquire() as conn:
        await conn.execute("UPDATE shards SET epoch = $2 WHERE shard_id = $1 AND epoch < $2",
                           shard_id, current)
    seconds = time.monotonic() - started
    log.warning("shard %d resumed on timeline %d after %.1f s: holds are accepted again",
                shard_id, current, seconds)
    return Resumed(shard_id, current, seconds, 0)


async def _seatmap(pool: Any, shard_id: int) -> None:
    """Wait, within SLOT_WAIT_SECONDS, for the seat map's slots on this database to be
    streamed again; a shard with no slot has no seat-map consumer to wait for."""
    deadline = time.monotonic() + SLOT_WAIT_SECONDS
    while True:
        async with pool.acquire() as conn:
            slots = await conn.fetch(
                "SELECT slot_name, active FROM pg_replication_slots "
                "WHERE slot_type = 'logical' AND plugin = 'pgoutput' "
                "AND database = current_database()")
        idle = [s["slot_name"] for s in slots if not s["active"]]
        if not idle:
            return
        if time.monotonic() > deadline:
            log.error("shard %d resumes with seat-map slot(s) %s not streamed: its seat "
                      "maps lag until their consumer returns", shard_id, ", ".join(idle))
            return
        await asyncio.sleep(0.5)


async def _reconcile(pool: Any, payments: Payments) -> None:
    """Every operation in doubt made due now, then reconciled until none is left due."""
    async with pool.acquire() as conn:
        await conn.execute(
            "UPDATE payment_operations SET next_check_at = now() "
            "WHERE status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION') AND next_check_at > now() "
            # not a checkout sending its first request right now, on the new primary
            "AND updated_at < now() - interval '5 seconds'")
    while sum((await reconcile_once(payments)).values()) >= 100:
        pass


async def run_resume(pool: Any, payments: Payments | None, settings: Settings,
                     directory: Any | None = None) -> None:
    """Check every CHECK_SECONDS, resume when a failover happened; forever."""
    while True:
        try:
            await resume_if_failed_over(pool, payments, settings, directory)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the shard is down (no primary yet): try again
            log.debug("failover check failed: %s", exc)
        await asyncio.sleep(CHECK_SECONDS)
