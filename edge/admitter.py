"""The admitter: one loop per edge process, exactly one active per event.

Every tick, for each live event, it takes or renews the event's lease in
Redis (a fencing token comes with it; every write below is refused unless the
token is still the current one), sweeps ghosts, no-shows and idle sessions,
runs the random draw when the sale opens, asks the controller for the rate
every couple of seconds, and advances "now serving" by what the rate and the
cap allow. Then it publishes the event's status for every edge process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass, field

from onsale.core.event_store import commit_draw_seed
from onsale.edge.admission import RateMeter, admit_budget
from onsale.edge.caches import EventConfig, every
from onsale.edge.controller import Bounds, Decision, Health, Targets, decide
from onsale.edge.draw import draw_order
from onsale.edge.health import HealthSource
from onsale.edge.queries import queries
from onsale.edge.queue_store import Fenced, QueueStore
from onsale.edge.runtime import Edge
from onsale.kernel.config import Settings

log = logging.getLogger("onsale.admitter")
CONTROL_SECONDS = 2.0
DRAW_CHUNK = 5000


@dataclass
class EventRun:
    """What this admitter knows about one event while it holds the lease."""

    fence: int
    last: float
    rate: float
    carry: float = 0.0
    admitted: int = 0
    drawn: bool = False
    merged: bool = False
    decision: Decision | None = None
    health: Health | None = None
    controlled: float = 0.0
    meter: RateMeter = field(default_factory=RateMeter)


def targets_from(settings: Settings) -> Targets:
    """The controller's targets from the ONSALE_TARGET_* settings."""
    return Targets(hold_p99_ms=settings.target_hold_p99_ms,
                   lock_wait_p99_ms=settings.target_lock_wait_p99_ms,
                   conflict_rate=settings.target_conflict_rate,
                   payment_error_rate=settings.target_payment_error_rate,
                   completion_floor=settings.target_completion_floor,
                   active_headroom=settings.target_active_headroom)


class Admitter:
    def __init__(self, edge: Edge, *, owner: str | None = None,
                 health: HealthSource | None = None, targets: Targets | None = None,
                 control_seconds: float = CONTROL_SECONDS, record: bool = False,
                 bulk: QueueStore | None = None) -> None:
        self.edge = edge
        # The draw's and the pre-queue merge's large replies and long scripts: a client
        # without the request path's short bound (edge.runtime.start_edge gives one).
        self.bulk = bulk or edge.store
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.health = health or HealthSource(edge.redis)
        self.targets = targets or targets_from(edge.settings)
        self.control_seconds = control_seconds
        self.runs: dict[int, EventRun] = {}
        self.record = record
        self.admitted: list[tuple[int, str]] = []  # only with record=True (tests)
        self._events: list[int] = []
        self._listed = 0.0

    @property
    def lease_ms(self) -> int:
        return max(2000, int(self.edge.settings.admitter_interval * 8000))

    async def run(self) -> None:
        try:
            await every(self.edge.settings.admitter_interval, self.tick, "admitter")
        finally:
            for event_id in list(self.runs):
                try:
                    await asyncio.shield(self.edge.store.release_lease(event_id, self.owner))
                except Exception:  # the lease expires on its own
                    pass

    async def live_events(self) -> list[int]:
        if time.monotonic() - self._listed > 2.0:
            async with self.edge.db.connection() as conn:
                rows = await conn.fetch(queries("queue")["live_events"])
            self._events = [r["event_id"] for r in rows]
            self._listed = time.monotonic()
        return self._events

    async def tick(self) -> None:
        for event_id in await self.live_events():
            config = await self.edge.configs.get(event_id)
            if config is None:
                continue
            try:
                await self.tick_event(config)
            except Fenced:
                log.info("event %s: lost the admitter lease", event_id)
                self.runs.pop(event_id, None)

    async def tick_event(self, config: EventConfig) -> None:
        store, settings, event_id = self.edge.store, self.edge.settings, config.event_id
        fence = await store.acquire_lease(event_id, self.owner, self.lease_ms)
        if fence == 0:
            self.runs.pop(event_id, None)
            return
        now = time.monotonic()
        run = self.runs.get(event_id)
        if run is None or run.fence != fence:
            known = (await store.statuses([event_id]))[event_id]
            run = EventRun(fence=fence, last=now, rate=float(config.rate_min),
                           drawn=known.get("draw") == "drawn")
            self.runs[event_id] = run
        now_ms = int(time.time() * 1000)
        swept = await store.sweep(
            event_id, fence, now_ms, settings.queue_abandon_seconds * 1000,
            settings.admission_claim_seconds * 1000, settings.shopper_idle_seconds * 1000)
        status: dict[str, str | int | float] = {"updated": f"{time.time():.3f}",
                                                "owner": self.owner}
        if config.policy == "passthrough" or not config.sale_open():
            run.last = now
            status.update(state=config.policy if config.policy == "passthrough" else "waiting",
                          paused=int(config.paused), rate=run.rate, measured=0)
            await store.publish(event_id, status)
            return
        if config.policy == "random" and not run.drawn:
            await self.draw(config, run)
        elif config.policy == "fifo" and not run.merged:
            if not run.drawn and await self.bulk.prequeue_size(event_id):
                await self.bulk.merge_prequeue(event_id, fence)
            run.merged = True
        occupied = swept.active + swept.pending
        decision = await self.control(config, run, occupied, now)
        budget = admit_budget(rate_per_min=decision.rate, elapsed=now - run.last,
                              carry=run.carry, cap=config.cap, occupied=occupied,
                              paused=not decision.admitting)
        run.last, run.carry = now, budget.carry
        result = await store.admit(event_id, fence, budget.admit, now_ms,
                                   settings.queue_abandon_seconds * 1000, config.cap)
        run.admitted += len(result.accounts)
        run.meter.record(now, run.admitted)
        if self.record:
            self.admitted += [(event_id, account) for account in result.accounts]
        status.update(state=decision.state, paused=int(not decision.admitting),
                      rate=f"{decision.rate:.3f}", measured=f"{run.meter.per_minute():.3f}",
                      reason="; ".join(decision.reasons))
        await store.publish(event_id, status)

    async def control(self, config: EventConfig, run: EventRun, occupied: int,
                      now: float) -> Decision:
        """The controller every ``control_seconds``; an operator's pause at once."""
        if (run.decision is None or now - run.controlled >= self.control_seconds
                or config.paused):
            run.health = await self.health.snapshot(active=occupied, cap=config.cap)
            run.decision = decide(run.rate, run.health,
                                  Bounds(config.rate_min, config.rate_max), self.targets,
                                  operator_paused=config.paused)
            run.rate, run.controlled = run.decision.rate, now
        elif not config.rate_min <= run.rate <= config.rate_max:
            run.rate = min(config.rate_max, max(config.rate_min, run.rate))
            run.decision = Decision(run.rate, run.decision.state, run.decision.reasons)
        return run.decision

    async def draw(self, config: EventConfig, run: EventRun) -> None:
        """Close the pre-queue, order it by the committed seed, publish the
        participants and the seed, then give the places (idempotent steps: a
        new lease holder repeats them with the same participants)."""
        store, event_id = self.bulk, config.event_id
        await store.close_draw(event_id, run.fence)
        async with self.edge.db.slow_connection() as conn:
            secret = await conn.fetchrow(queries("queue")["draw_secret"], event_id)
            if secret is None:  # no seed committed: nothing to draw by
                await commit_draw_seed(conn, event_id)
                secret = await conn.fetchrow(queries("queue")["draw_secret"], event_id)
            members = sorted(await store.participants(event_id))
            recorded = members
            if not await conn.fetchval(queries("queue")["record_draw"], event_id, members):
                # Recorded before (a repeat): the first record's participants, always.
                recorded = await conn.fetchval(queries("queue")["recorded_draw"], event_id)
            await conn.execute(queries("queue")["reveal_seed"], event_id)
        order = draw_order(secret["seed"], [str(p) for p in recorded])
        for start in range(0, len(order), DRAW_CHUNK):
            await store.assign_draw(event_id, run.fence, start, order[start:start + DRAW_CHUNK])
        await store.finish_draw(event_id, run.fence)
        self.edge.configs.forget(event_id)
        run.drawn = True
        log.info("event %s: drew %d participants", event_id, len(order))
