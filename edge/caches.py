"""What each edge process keeps in memory so that a queue poll costs no
Redis and no database round trip:

- ``EventConfigs``: the waiting-room settings of the events it has seen, from
  Postgres (the authority), refreshed in the background about once a second;
- ``StatusCache``: each event's "now serving" number and admission state, from
  Redis, refreshed a few times a second;
- ``Marks``: "this visitor polled" / "this shopper made a request", batched and
  written once per interval as one ZADD per event.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from onsale.edge.queries import queries
from onsale.edge.queue_store import QueueStore
from onsale.edge.risk import OFF, Thresholds
from onsale.kernel.db import Database
from onsale.kernel.dependency import is_outage

log = logging.getLogger("onsale.edge")


@dataclass(frozen=True)
class EventConfig:
    event_id: int
    policy: str
    prequeue_at: float | None     # unix seconds, by the database clock
    onsale_at: float
    starts_at: float
    rate_min: int
    rate_max: int
    cap: int
    pow_difficulty: int
    paused: bool
    commitment: str | None
    seed: str | None
    clock_offset: float           # database clock - this process's clock (seconds)
    risk: Thresholds = OFF        # where the risk bands start (edge/risk.py); OFF: none

    def now(self) -> float:
        """The database's idea of now, the clock sales are judged by."""
        return time.time() + self.clock_offset

    def queue_open(self) -> bool:
        return self.prequeue_at is None or self.now() >= self.prequeue_at

    def sale_open(self, at: float | None = None) -> bool:
        """``at``: unix seconds by this process's clock (now when None)."""
        return (time.time() if at is None else at) + self.clock_offset >= self.onsale_at


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def config_from_row(row: Any) -> EventConfig:
    return EventConfig(
        event_id=row["event_id"], policy=row["queue_policy"],
        prequeue_at=_ts(row["prequeue_at"]), onsale_at=row["onsale_at"].timestamp(),
        starts_at=row["starts_at"].timestamp(), rate_min=row["admission_rate_min"],
        rate_max=row["admission_rate_max"], cap=row["active_cap"],
        pow_difficulty=row["pow_difficulty"], paused=row["admission_paused"],
        commitment=row["draw_commitment"], seed=row["draw_seed"],
        clock_offset=row["db_now"].timestamp() - time.time(),
        risk=Thresholds(row["risk_raised"], row["risk_high"], row["risk_refused"]))


class EventConfigs:
    """Settings by event id; a miss reads Postgres once, then the refresher
    keeps the entry fresh. A database outage keeps the last known settings.
    "No such event" is remembered for ``missing_seconds`` only (the id may be
    created next)."""

    def __init__(self, db: Database, max_events: int = 10_000,
                 missing_seconds: float = 2.0) -> None:
        self.db = db
        self.max_events = max_events
        self.missing_seconds = missing_seconds
        self._known: dict[int, EventConfig] = {}
        self._missing: dict[int, float] = {}

    def cached(self, event_id: int) -> EventConfig | None:
        return self._known.get(event_id)

    async def get(self, event_id: int) -> EventConfig | None:
        """None: no such event."""
        if event_id in self._known:
            return self._known[event_id]
        if time.monotonic() - self._missing.get(event_id, -1e9) < self.missing_seconds:
            return None
        found = (await self.load([event_id])).get(event_id)
        if found is None:
            if len(self._missing) >= self.max_events:
                self._missing.clear()
            self._missing[event_id] = time.monotonic()
            return None
        if len(self._known) >= self.max_events:
            self._known.pop(next(iter(self._known)))
        self._known[event_id] = found
        return found

    async def load(self, event_ids: list[int]) -> dict[int, EventConfig]:
        async with self.db.connection() as conn:
            rows = await conn.fetch(queries("queue")["queue_config"], event_ids)
        return {row["event_id"]: config_from_row(row) for row in rows}

    async def refresh(self) -> None:
        if self._known:
            self._known.update(await self.load(list(self._known)))

    def forget(self, event_id: int) -> None:
        self._known.pop(event_id, None)


@dataclass(frozen=True)
class Status:
    serving: int = 0
    draw: str | None = None        # None, "closed" (drawing) or "drawn"
    state: str = "waiting"         # the controller's state, or "waiting" before the sale
    paused: bool = False
    rate: float = 0.0              # the controller's rate, per minute
    measured: float = 0.0          # admissions per minute actually measured
    updated: float = 0.0           # unix seconds of the admitter's last tick


def status_from(raw: dict[str, str]) -> Status:
    return Status(
        serving=int(raw.get("serving", "0")), draw=raw.get("draw"),
        state=raw.get("state", "waiting"), paused=raw.get("paused") == "1",
        rate=float(raw.get("rate", "0")), measured=float(raw.get("measured", "0")),
        updated=float(raw.get("updated", "0")))


class StatusCache:
    """The admission status of each event this process serves. ``fetched`` is
    when Redis last answered (monotonic); older than ``stale_after`` and the
    queue shows as paused instead of trusting a number that no longer moves."""

    def __init__(self, store: QueueStore, stale_after: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.stale_after = stale_after
        self._clock = clock
        self._status: dict[int, Status] = {}
        self._wanted: dict[int, float] = {}
        self.fetched = 0.0

    def get(self, event_id: int) -> Status | None:
        self._wanted[event_id] = self._clock()
        return self._status.get(event_id)

    def stale(self) -> bool:
        return self._clock() - self.fetched > self.stale_after

    def snapshot(self) -> dict[int, Status]:
        """The statuses held now (for the metrics; no I/O)."""
        return dict(self._status)

    def served(self) -> list[int]:
        """The events this process served, the most recently served first."""
        return sorted(self._wanted, key=self._wanted.__getitem__, reverse=True)

    async def load(self, event_id: int) -> Status:
        """First sight of an event in this process: one read, then the refresher."""
        self._wanted[event_id] = self._clock()
        found = await self.store.statuses([event_id])
        self._status[event_id] = status_from(found[event_id])
        return self._status[event_id]

    async def refresh(self, idle_after: float = 300.0) -> None:
        now = self._clock()
        for event_id in [e for e, t in self._wanted.items() if now - t > idle_after]:
            self._wanted.pop(event_id, None)
            self._status.pop(event_id, None)
        found = await self.store.statuses(list(self._wanted))
        self._status.update({e: status_from(raw) for e, raw in found.items()})
        self.fetched = self._clock()


class Marks:
    """Batched last-seen times: ``which`` is "seen" (queue polls) or "active"
    (gated requests). Memory is bounded by the visitors of one interval. The accounts
    stay UUIDs until their batch is written (a poll pays no ``str``)."""

    def __init__(self, store: QueueStore, which: str) -> None:
        self.store = store
        self.which = which
        self._batch: dict[int, dict[uuid.UUID, int]] = {}

    def add(self, event_id: int, account: uuid.UUID, now_ms: int) -> None:
        self._batch.setdefault(event_id, {})[account] = now_ms

    async def flush(self) -> None:
        batch, self._batch = self._batch, {}
        try:
            await self.store.mark(self.which, {
                event_id: {str(account): t for account, t in members.items()}
                for event_id, members in batch.items()})
        except Exception:
            for event_id, members in batch.items():  # keep them for the next try
                mine = self._batch.setdefault(event_id, {})
                for account, t in members.items():
                    mine[account] = max(t, mine.get(account, 0))
            raise


async def every(interval: float, step: Callable[[], Any], name: str) -> None:
    """Run ``step`` forever, ``interval`` apart; failures are logged, never fatal
    (a dependency being down is not: its circuit breaker logs that once)."""
    while True:
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not is_outage(exc):
                log.warning("%s failed: %s", name, exc)
        await asyncio.sleep(interval)
