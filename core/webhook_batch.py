"""Webhook deliveries that only need recording, gathered into one statement per shard.

Most deliveries confirm what a provider's response already applied: the delivery is
recorded (by its event id, so a duplicate changes nothing) and nothing else happens.
Each such record used to be a transaction of its own, two a checkout. The deliveries
of one shard that arrive while its batch is in the database share the next one
(``record_webhooks``, at most 64), on the lanes of ``core/hold_batch.py``: each
delivery learns whether it was stored or a duplicate, a batch that fails with a
database error records each alone, an outage is each one's 503 (the provider
retries), and one event id is never twice in a batch. Deliveries that change an
operation are not batched: they lock the purchase (``core/webhooks.py``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from onsale.core.hold_batch import BatchMetrics, HoldBatcher, _Request
from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.kernel.db import Database

_EVENT_IDS = uuid.UUID("7f4c6d55-8a0e-4f1b-9a51-6f0bd5a53c11")  # uuid5 namespace


@dataclass(frozen=True)
class Delivery:
    """One record: the event's id, type and PaymentIntent, the outcome, its JSON."""

    event_id: str
    event_type: str
    intent_id: str | None
    outcome: str
    payload: str


class WebhookRecords(HoldBatcher[int, Delivery]):
    """A lane per shard; each request is one delivery to record."""

    name = "Webhook record"

    def __init__(self, db: Database, metrics: Metrics | None = None, *, max_batch: int = 64,
                 inflight: int = 1) -> None:
        counters = None if metrics is None else BatchMetrics(
            metrics.webhook_batch_size, metrics.webhook_batch_failures,
            metrics.deadlock_retries)
        super().__init__(db, counters, max_batch=max_batch, inflight=inflight)
        self.statement = queries("payments")["record_webhooks"]

    def arguments(self, lane: int, batch: list[_Request[Delivery]]) -> tuple[Any, ...]:
        d = [r.ask for r in batch]
        return ([x.event_id for x in d], [x.event_type for x in d], [x.intent_id for x in d],
                [x.outcome for x in d], [x.payload for x in d])

    async def record(self, db: Database, delivery: Delivery) -> bool | None:
        """Whether it was stored (False: recorded before, a duplicate); None: the batch
        could not say, record it alone."""
        # the batcher keeps one request per "account" in a batch: one per event id here
        key = uuid.uuid5(_EVENT_IDS, delivery.event_id)
        row = await self.ask(id(db), key, delivery.event_id, "", delivery, db)
        return None if row is None else bool(row["stored"])
