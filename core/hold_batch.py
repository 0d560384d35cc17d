"""Hold requests of one lane that arrive together, answered by one transaction.

On a hot tier or a hot block most of a hold's cost is per transaction, not per
hold: the commit, the statement's start, the round trip, and downstream the change
capture and the seat map's delta for each commit. So a process gathers the hold
requests of one lane (a GA tier: ``core/ga_batch.py``; an event's seats:
``core/seat_batch.py``) while a batch of that lane is in the database, and sends them
as the next batch (at most ``max_batch`` each, ``inflight`` batches of a lane at
once). Nothing waits for a batch to fill: a request that finds fewer than
``inflight`` batches running starts one at once.

Each request still gets its own answer, the one the one-hold function would give. An
element the batch cannot settle comes back as ``None`` (run it alone) or with status
0 (GA only: its stripe was short, the spread stage alone). A batch that fails with a
database error that is not an outage is run again element by element, alone; an
outage is every element's 503. A request waits in the queue at most as long as it
would wait for a pool connection (``ONSALE_DB_ACQUIRE_TIMEOUT``), then gets the same
503. docs/general-admission.md#batched-holds, docs/design.md#seat-holds-in-batches.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import asyncpg
from prometheus_client import Counter, Histogram

from onsale.kernel.db import Database
from onsale.kernel.problems import RESUMING, Problem

log = logging.getLogger("onsale.hold_batch")

Row = dict[str, Any]  # status_code, body, lock_wait_ms, replayed
MAX_BATCH = 64  # advisory locks a batch takes at most (one per account): the lock table
QUEUED_TOO_LONG = "The database is busy: this request waited too long for its turn; retry."
STOPPED = "This process is stopping; retry with the same Idempotency-Key."

Lane = TypeVar("Lane", bound=Hashable)  # what one batch shares: (event, tier), or event
Ask = TypeVar("Ask")  # what one request asks for: a quantity, or its seats


@dataclass
class _Request(Generic[Ask]):
    account: uuid.UUID
    key: str
    digest: str
    ask: Ask
    answer: asyncio.Future[Row | None]
    since: float = 0.0  # loop time it was queued


@dataclass
class _Lane(Generic[Ask]):
    """The waiting requests of one lane, how many of its batches run, and the accounts
    in those batches (a second request of one waits until its batch is done, so the
    first one's hold counts against its limits and one account's burst never makes
    every batch queue behind its advisory lock)."""

    db: Database  # the event's shard
    waiting: deque[_Request[Ask]] = field(default_factory=deque)
    running: int = 0
    busy: set[uuid.UUID] = field(default_factory=set)


@dataclass(frozen=True)
class BatchMetrics:
    """Where a batcher counts: requests per batch, batches that failed, and the
    deadlocks among those (the hold path's one deadlock counter)."""

    size: Histogram
    failures: Counter
    deadlocks: Counter


class HoldBatcher(Generic[Lane, Ask]):
    """The lanes and their drains; a subclass says what one batch's statement is
    (``statement``) and what it is sent (``arguments``)."""

    statement: str
    name = "hold"  # the log's and the task's word for this kind of batch

    def __init__(self, db: Database, counters: BatchMetrics | None = None, *,
                 max_batch: int = 32, inflight: int = 1,
                 max_wait: float | None = None) -> None:
        self.db = db  # where a lane goes when ``hold`` names no shard
        self.counters = counters
        self.max_batch = max(1, min(max_batch, MAX_BATCH))
        self.inflight = inflight
        self.max_wait = getattr(db, "acquire_timeout", 1.0) if max_wait is None else max_wait
        self._lanes: dict[Lane, _Lane[Ask]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.batches = 0  # batches sent (tests and the bench read these)
        self.elements = 0

    def arguments(self, lane: Lane, batch: list[_Request[Ask]]) -> tuple[Any, ...]:
        raise NotImplementedError

    async def ask(self, lane_key: Lane, account: uuid.UUID, key: str, digest: str,
                  ask: Ask, db: Database | None = None) -> Row | None:
        """This request's answer row from a batch, or None: run it alone. ``db``: the
        event's shard (``self.db`` when None)."""
        loop = asyncio.get_running_loop()
        lane = self._lanes.get(lane_key)
        if lane is None:
            lane = self._lanes[lane_key] = _Lane(db or self.db)
        answer: asyncio.Future[Row | None] = loop.create_future()
        lane.waiting.append(_Request(account, key, digest, ask, answer, loop.time()))
        if lane.running < self.inflight:
            lane.running += 1
            task = asyncio.create_task(self._drain(lane_key, lane),
                                       name=f"onsale-{self.name}-batch")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await answer

    async def _drain(self, lane_key: Lane, lane: _Lane[Ask]) -> None:
        try:
            while batch := self._take(lane, asyncio.get_running_loop().time()):
                lane.busy.update(r.account for r in batch)
                try:
                    await self._send(lane.db, lane_key, batch)
                finally:
                    lane.busy.difference_update(r.account for r in batch)
        except BaseException:  # cancelled (shutting down): nobody is left waiting
            for request in lane.waiting:
                if not request.answer.done():
                    request.answer.set_exception(Problem(503, "inventory_unavailable",
                                                         detail=STOPPED))
            lane.waiting.clear()
            raise
        finally:
            lane.running -= 1
            if lane.running == 0 and not lane.waiting:
                self._lanes.pop(lane_key, None)

    def _take(self, lane: _Lane[Ask], now: float) -> list[_Request[Ask]]:
        """The next batch: the oldest waiting requests, at most ``max_batch``, one per
        account and none of an account in a batch still running (those wait, in their
        place). Requests gone meanwhile are dropped; those queued past ``max_wait`` get
        the 503 of a request that waited too long for a connection."""
        batch: list[_Request[Ask]] = []
        accounts: set[uuid.UUID] = set()
        later: list[_Request[Ask]] = []
        while lane.waiting and len(batch) < self.max_batch:
            request = lane.waiting.popleft()
            if request.answer.done():  # its request went away (client gone, timed out)
                continue
            if now - request.since > self.max_wait:
                request.answer.set_exception(Problem(503, "inventory_unavailable",
                                                     detail=QUEUED_TOO_LONG))
                continue
            if request.account in accounts or request.account in lane.busy:
                later.append(request)
            else:
                accounts.add(request.account)
                batch.append(request)
        lane.waiting.extendleft(reversed(later))
        return batch

    async def _send(self, db: Database, lane_key: Lane, batch: list[_Request[Ask]]) -> None:
        rows: list[Any] | None = None
        failure: BaseException | None = None
        try:
            async with db.connection() as conn:
                rows = await conn.fetch(self.statement, *self.arguments(lane_key, batch))
        except asyncpg.PostgresError as exc:
            if getattr(exc, "sqlstate", "") == "OS503":  # the shard is resuming: every one
                failure = Problem(503, "inventory_unavailable", detail=RESUMING, resuming=True)
                return
            # Not an outage (db.connection turns those into the 503): every element
            # alone, where an error means what it says about that one request.
            rows = None
            log.warning("%s batch of %d failed (%s %s); each runs alone", self.name,
                        len(batch), getattr(exc, "sqlstate", ""), type(exc).__name__)
            if self.counters is not None:
                self.counters.failures.labels(
                    sqlstate=str(getattr(exc, "sqlstate", "") or "")).inc()
                if isinstance(exc, asyncpg.DeadlockDetectedError):
                    self.counters.deadlocks.inc()
        except Exception as exc:  # an outage (the 503 problem), or a bug: every element's
            failure = exc
        except BaseException:  # cancelled (shutting down)
            failure = Problem(503, "inventory_unavailable", detail=STOPPED)
            raise
        finally:
            self.batches += 1
            self.elements += len(batch)
            if self.counters is not None:
                self.counters.size.observe(len(batch))
            by_element = {row["i"]: dict(row) for row in rows or ()}
            for n, request in enumerate(batch, start=1):
                if request.answer.done():  # its request went away meanwhile
                    continue
                if failure is not None:
                    request.answer.set_exception(failure)
                else:
                    request.answer.set_result(by_element.get(n))
