"""Capture answers of one shard applied together (``apply_batch``).

Once a sale commits, its capture is sent from the same process and the answer
recorded (``onsale_payment_apply``): a transaction of its own per checkout. A capture
answer changes no seat, so its apply locks only the order and the operation (the
tail of the lock ladder): the answers that arrive while the shard's batch is in the
database share the next transaction, on the lanes of ``core/hold_batch.py``, applied
in operation-id order (two batches never wait on each other in a cycle). Each answer
gets its own result; a batch that fails with a database error applies each alone, an
outage is each one's error (the reconciler converges them). docs/payments.md.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from onsale.core.hold_batch import BatchMetrics, HoldBatcher, _Request
from onsale.core.metrics import Metrics
from onsale.core.payment_rules import Outcome
from onsale.core.queries import queries
from onsale.kernel.db import Database


class CaptureRecords(HoldBatcher[int, tuple[Outcome, str]]):
    """A lane per shard; each request is one capture answer (its outcome, its source)."""

    name = "Capture record"

    def __init__(self, db: Database, retry_seconds: int, metrics: Metrics | None = None, *,
                 max_batch: int = 64, inflight: int = 1) -> None:
        counters = None if metrics is None else BatchMetrics(
            metrics.capture_batch_size, metrics.capture_batch_failures,
            metrics.deadlock_retries)
        super().__init__(db, counters, max_batch=max_batch, inflight=inflight)
        self.retry_seconds = retry_seconds
        self.statement = queries("payments")["apply_batch"]

    def arguments(self, lane: int, batch: list[_Request[tuple[Outcome, str]]]
                  ) -> tuple[Any, ...]:
        outcomes = [r.ask[0] for r in batch]
        return ([uuid.UUID(r.key) for r in batch], [o.outcome for o in outcomes],
                [o.provider_ref for o in outcomes], [o.failure_code for o in outcomes],
                [None if o.next_action is None else json.dumps(o.next_action)
                 for o in outcomes],
                [r.ask[1] for r in batch], self.retry_seconds)

    async def apply(self, db: Database, operation_id: uuid.UUID, outcome: Outcome,
                    source: str) -> Any | None:
        """The apply's result for this answer; None: the batch could not say, apply it
        alone."""
        row = await self.ask(id(db), operation_id, str(operation_id), "", (outcome, source), db)
        return None if row is None else row["result"]
