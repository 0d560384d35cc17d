"""GA holds of one tier that arrive together, answered by one transaction
(``onsale_ga_hold_batch``), through the batcher of ``core/hold_batch.py``.

Each request gets the answer ``onsale_ga_hold`` would give. An element the batch
cannot settle comes back as ``None`` (run it alone, through ``onsale_ga_hold``) or
with status 0 (its stripe was short: the spread stage, alone).
docs/general-admission.md#batched-holds.
"""

from __future__ import annotations

import uuid
from typing import Any

from onsale.core.hold_batch import MAX_BATCH, BatchMetrics, HoldBatcher, Row, _Lane, _Request
from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.kernel.db import Database

__all__ = ["MAX_BATCH", "GABatcher", "Row", "_Lane", "_Request"]


class GABatcher(HoldBatcher[tuple[int, int], int]):
    """Lanes of (event, tier); each request asks a quantity."""

    name = "GA hold"

    def __init__(self, db: Database, metrics: Metrics | None = None, *, max_batch: int = 32,
                 inflight: int = 1, max_wait: float | None = None) -> None:
        counters = None if metrics is None else BatchMetrics(
            metrics.ga_batch_size, metrics.ga_batch_failures, metrics.deadlock_retries)
        super().__init__(db, counters, max_batch=max_batch, inflight=inflight,
                         max_wait=max_wait)
        self.statement = queries("holds")["hold_ga_batch"]

    def arguments(self, lane: tuple[int, int], batch: list[_Request[int]]) -> tuple[Any, ...]:
        event_id, tier_id = lane
        return (event_id, tier_id, [r.account for r in batch], [r.key for r in batch],
                [r.digest for r in batch], [r.ask for r in batch])

    async def hold(self, event_id: int, tier_id: int, account: uuid.UUID, key: str,
                   digest: str, quantity: int, db: Database | None = None) -> Row | None:
        """This request's answer row from a batch, or None: run it alone. ``db``: the
        event's shard (``self.db`` when None)."""
        return await self.ask((event_id, tier_id), account, key, digest, quantity, db)
