"""The admitter: one loop per edge process, exactly one active per event.

Every tick, for each live event, it takes or renews the event's lease in
Redis (a fencing token comes with it; every write below is refused unless the
token is still the current one), sweeps ghosts, no-shows and idle sessions,
runs the random draw when the sale opens, asks the controller for the rate
every couple of seconds, and advances "now serving" by what the rate and the
cap allow. Then it publishes the event's status for every edge process.

What to do, and in which order, is decided by ``edge.admitter_step`` (pure); this
module performs each action it returns and feeds the answer back.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from typing import assert_never

from onsale.core.event_store import commit_draw_seed
from onsale.edge.admitter_step import (
    AcquireLease,
    Action,
    Admit,
    Answer,
    CountPrequeue,
    Draw,
    Drawn,
    DrawWaiting,
    EventRun,
    EventStep,
    Leased,
    Merged,
    MergePrequeue,
    Prequeue,
    Publish,
    Published,
    ReadHealth,
    ReadStatus,
    Rules,
    Sweep,
)
from onsale.edge.caches import EventConfig, every, status_from
from onsale.edge.controller import Targets
from onsale.edge.draw import draw_key_of, draw_order
from onsale.edge.draw_beacon import BeaconWait, Waiting
from onsale.edge.health import HealthSource
from onsale.edge.queries import queries
from onsale.edge.queue_store import Fenced, QueueStore
from onsale.edge.runtime import Edge
from onsale.edge.shard_copy import copy_to_shard
from onsale.kernel.beacon_chain import chain_setting
from onsale.kernel.config import Settings
from onsale.kernel.progress import crossed_tenth

log = logging.getLogger("onsale.admitter")
CONTROL_SECONDS = 2.0
DRAW_CHUNK = 5000


def targets_from(settings: Settings) -> Targets:
    """The controller's targets from the ONSALE_TARGET_* settings."""
    return Targets(hold_p99_ms=settings.target_hold_p99_ms,
                   lock_wait_p99_ms=settings.target_lock_wait_p99_ms,
                   conflict_rate=settings.target_conflict_rate,
                   payment_error_rate=settings.target_payment_error_rate,
                   completion_floor=settings.target_completion_floor,
                   active_headroom=settings.target_active_headroom)


def lease_ms(settings: Settings) -> int:
    return max(2000, int(settings.admitter_interval * 8000))


class Admitter:
    def __init__(self, edge: Edge, *, owner: str | None = None,
                 health: HealthSource | None = None, targets: Targets | None = None,
                 control_seconds: float = CONTROL_SECONDS, record: bool = False,
                 bulk: QueueStore | None = None,
                 shard_of: Callable[[int], int | None] | None = None) -> None:
        self.edge = edge
        # The shard of an event (the process's cached placement): its health is its own.
        self.shard_of = shard_of or (lambda event_id: None)
        # The draw's and the pre-queue merge's large replies and long scripts: a client
        # without the request path's short bound (edge.tier.running_edge gives one).
        self.bulk = bulk or edge.store
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.health = health or HealthSource(edge.redis)
        settings = edge.settings
        self.rules = Rules(owner=self.owner, lease_ms=lease_ms(settings),
                           abandon_ms=settings.queue_abandon_seconds * 1000,
                           claim_ms=settings.admission_claim_seconds * 1000,
                           idle_ms=settings.shopper_idle_seconds * 1000,
                           targets=targets or targets_from(settings),
                           control_seconds=control_seconds)
        self.runs: dict[int, EventRun] = {}
        # The beacon rounds draws wait for (the relays asked at most every second).
        self.beacons = BeaconWait(settings.beacon_relays.split(","))
        self.record = record
        self.admitted: list[tuple[int, str]] = []  # only with record=True (tests)
        self._events: list[int] = []
        self._listed = 0.0

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
        """Perform what the event's step asks for, until it has nothing more."""
        step = EventStep(self.runs.get(config.event_id), config, self.rules)
        action: Action | None = step.start()
        try:
            while action is not None:
                action = step.feed(await self.perform(config, action))
        finally:  # an outage mid-tick keeps what the step learnt (Fenced: tick drops it)
            if step.run is None:
                self.runs.pop(config.event_id, None)
            else:
                self.runs[config.event_id] = step.run

    async def perform(self, config: EventConfig, action: Action) -> Answer:
        store, event_id = self.edge.store, config.event_id
        match action:
            case AcquireLease(ttl_ms=ttl_ms):
                fence = await store.acquire_lease(event_id, self.owner, ttl_ms)
                return Leased(fence, time.monotonic(), time.time())
            case ReadStatus():
                return status_from((await store.statuses([event_id]))[event_id])
            case Sweep():
                return await store.sweep(event_id, action.fence, action.now_ms, action.grace_ms,
                                         action.claim_ms, action.idle_ms)
            case Draw(fence=fence):
                return Drawn() if await self.draw(config, fence) else DrawWaiting()
            case CountPrequeue():
                return Prequeue(await self.bulk.prequeue_size(event_id))
            case MergePrequeue(fence=fence):
                await self.bulk.merge_prequeue(event_id, fence)
                return Merged()
            case ReadHealth(active=active, cap=cap):
                return await self.health.snapshot(active=active, cap=cap,
                                                  shard=self.shard_of(event_id))
            case Admit():
                admitted = await store.admit(event_id, action.fence, action.n, action.now_ms,
                                             action.grace_ms, action.cap)
                if self.record:
                    self.admitted += [(event_id, account) for account in admitted.accounts]
                return admitted
            case Publish(fields=fields):
                await store.publish(event_id, fields)
                return Published()
            case _:
                assert_never(action)

    async def draw(self, config: EventConfig, fence: int) -> bool:
        """Close the pre-queue, wait for the committed beacon round if there is one,
        order the participants by the draw's key, publish them and the seed, then give
        the places (idempotent steps: a new lease holder repeats them with the same
        participants). False while the beacon round is awaited (the next tick asks
        again; the pre-queue stays closed)."""
        store, event_id, q = self.bulk, config.event_id, queries("queue")
        await store.close_draw(event_id, fence)
        async with self.edge.db.slow_connection() as conn:
            secret = await conn.fetchrow(q["draw_secret"], event_id)
            if secret is None:  # no seed committed: nothing to draw by
                await commit_draw_seed(conn, event_id, chain_setting(self.edge.settings.beacon))
                secret = await conn.fetchrow(q["draw_secret"], event_id)
            closed_at = await conn.fetchval(q["draw_closed_at"], event_id)
            outcome = await self.beacons.outcome(conn, event_id, secret, closed_at)
            if isinstance(outcome, Waiting):
                return False
            members = sorted(await store.participants(event_id))
            recorded = members
            if not await conn.fetchval(q["record_draw"], event_id, members):
                # Recorded before (a repeat): the first record's participants, always.
                recorded = await conn.fetchval(q["recorded_draw"], event_id)
            await conn.execute(q["reveal_seed"], event_id)
        await copy_to_shard(self.edge, event_id)  # the seed, public now, on the shard too
        order = draw_order(draw_key_of(secret["seed"], outcome), [str(p) for p in recorded])
        for start in range(0, len(order), DRAW_CHUNK):
            await store.assign_draw(event_id, fence, start, order[start:start + DRAW_CHUNK])
            given = min(start + DRAW_CHUNK, len(order))
            if given < len(order) and crossed_tenth(start, given, len(order)):
                log.info("event %s: the draw has given %d of %d places", event_id, given,
                         len(order))
        await store.finish_draw(event_id, fence)
        self.edge.configs.forget(event_id)
        log.info("event %s: drew %d participants", event_id, len(order))
        return True
