"""Seat holds of one event that arrive together, answered by one transaction
(``onsale_hold_batch``), through the batcher of ``core/hold_batch.py``.

Most attempts at a hot block lose, and alone each loss still costs a transaction.
In a batch the requests run in arrival order inside one statement: each is all or
nothing on its own seats, sees the claims of the requests before it, and gets the
answer ``onsale_hold`` would give it alone. An element the batch cannot settle comes
back as ``None``: run it alone, through ``onsale_hold``.
docs/design.md#seat-holds-in-batches.
"""

from __future__ import annotations

import uuid
from typing import Any

from onsale.core.hold_batch import BatchMetrics, HoldBatcher, Row, _Request
from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.kernel.db import Database

Seats = tuple[int, ...]


class SeatBatcher(HoldBatcher[int, Seats]):
    """A lane per event; each request asks for its seats (sorted, distinct)."""

    name = "Seat hold"

    def __init__(self, db: Database, metrics: Metrics | None = None, *, max_batch: int = 32,
                 inflight: int = 1, max_wait: float | None = None) -> None:
        counters = None if metrics is None else BatchMetrics(
            metrics.seat_batch_size, metrics.seat_batch_failures, metrics.deadlock_retries)
        super().__init__(db, counters, max_batch=max_batch, inflight=inflight,
                         max_wait=max_wait)
        self.statement = queries("holds")["hold_seats_batch"]

    def arguments(self, lane: int, batch: list[_Request[Seats]]) -> tuple[Any, ...]:
        return (lane, [r.account for r in batch], [r.key for r in batch],
                [r.digest for r in batch], [s for r in batch for s in r.ask],
                [n for n, r in enumerate(batch, start=1) for _ in r.ask])

    async def hold(self, event_id: int, account: uuid.UUID, key: str, digest: str,
                   seat_ids: Seats, db: Database | None = None) -> Row | None:
        """This request's answer row from a batch, or None: run it alone. ``db``: the
        event's shard (``self.db`` when None)."""
        return await self.ask(event_id, account, key, digest, seat_ids, db)
