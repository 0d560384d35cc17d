"""GA holds of one tier that arrive together, answered by one transaction.

On a hot tier most of a GA hold's cost is per transaction, not per hold: the
commit, the statement's start, the round trip, and downstream the change capture
and the seat map's delta for each commit. So a process gathers the hold requests
for one (event, tier) while a batch of that tier is in the database, and sends
them as the next batch (``onsale_ga_hold_batch``, at most ``max_batch`` each,
``inflight`` batches of a tier at once). Nothing waits for a batch to fill: a
request that finds fewer than ``inflight`` batches running starts one at once.

Each request still gets its own answer, the one ``onsale_ga_hold`` would give. An
element the batch cannot settle comes back as ``None`` (run it alone, through
``onsale_ga_hold``) or with status 0 (its stripe was short: the spread stage,
alone). A batch that fails with a database error that is not an outage is run
again element by element, alone; an outage is every element's 503.
docs/general-admission.md#batched-holds.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.kernel.db import Database

Row = dict[str, Any]  # status_code, body, lock_wait_ms, replayed


@dataclass
class _Request:
    account: uuid.UUID
    key: str
    digest: str
    quantity: int
    answer: asyncio.Future[Row | None]


@dataclass
class _Lane:
    """The waiting requests of one (event, tier) and how many of its batches run."""

    waiting: deque[_Request] = field(default_factory=deque)
    running: int = 0


class GABatcher:
    def __init__(self, db: Database, metrics: Metrics | None = None, *, max_batch: int = 32,
                 inflight: int = 2) -> None:
        self.db = db
        self.metrics = metrics
        self.max_batch = max_batch
        self.inflight = inflight
        self._lanes: dict[tuple[int, int], _Lane] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.statement = queries("holds")["hold_ga_batch"]
        self.batches = 0  # batches sent (tests and the bench read these)
        self.elements = 0

    async def hold(self, event_id: int, tier_id: int, account: uuid.UUID, key: str,
                   digest: str, quantity: int) -> Row | None:
        """This request's answer row from a batch, or None: run it alone."""
        lane = self._lanes.setdefault((event_id, tier_id), _Lane())
        answer: asyncio.Future[Row | None] = asyncio.get_running_loop().create_future()
        lane.waiting.append(_Request(account, key, digest, quantity, answer))
        if lane.running < self.inflight:
            lane.running += 1
            task = asyncio.create_task(self._drain(event_id, tier_id, lane),
                                       name="onsale-ga-batch")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await answer

    async def _drain(self, event_id: int, tier_id: int, lane: _Lane) -> None:
        try:
            while lane.waiting:
                await self._send(event_id, tier_id, self._take(lane))
        finally:
            lane.running -= 1
            if lane.running == 0 and not lane.waiting:
                self._lanes.pop((event_id, tier_id), None)

    def _take(self, lane: _Lane) -> list[_Request]:
        """The next batch: the oldest waiting requests, one per account (a second request
        of an account waits for the next batch, where the first one's hold counts
        against its limits), at most ``max_batch``."""
        batch: list[_Request] = []
        accounts: set[uuid.UUID] = set()
        later: list[_Request] = []
        while lane.waiting and len(batch) < self.max_batch:
            request = lane.waiting.popleft()
            if request.account in accounts:
                later.append(request)
            else:
                accounts.add(request.account)
                batch.append(request)
        lane.waiting.extendleft(reversed(later))
        return batch

    async def _send(self, event_id: int, tier_id: int, batch: list[_Request]) -> None:
        rows: list[Any] | None = None
        failure: BaseException | None = None
        try:
            async with self.db.connection() as conn:
                rows = await conn.fetch(
                    self.statement, event_id, tier_id,
                    [r.account for r in batch], [r.key for r in batch],
                    [r.digest for r in batch], [r.quantity for r in batch])
        except asyncpg.PostgresError:
            rows = None  # not an outage: every element alone, where errors mean what they say
        except Exception as exc:  # an outage (the 503 problem), or a bug: every element's
            failure = exc
        except BaseException as exc:  # cancelled (shutting down): nobody is left waiting
            failure = exc
            raise
        finally:
            self.batches += 1
            self.elements += len(batch)
            if self.metrics is not None:
                self.metrics.ga_batch_size.observe(len(batch))
            by_element = {row["i"]: dict(row) for row in rows or ()}
            for n, request in enumerate(batch, start=1):
                if request.answer.done():  # its request went away meanwhile
                    continue
                if isinstance(failure, Exception):
                    request.answer.set_exception(failure)
                elif failure is not None:
                    request.answer.cancel()
                else:
                    request.answer.set_result(by_element.get(n))
