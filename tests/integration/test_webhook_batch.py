"""Record-only webhook deliveries batched per shard (core/webhook_batch.py,
record_webhooks) against a real PostgreSQL: each delivery learns whether it was stored
or a duplicate, deliveries that arrive together share one transaction, one event id is
never twice in a batch, and a batch that fails leaves each to be recorded alone."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from onsale.core.metrics import Metrics
from onsale.core.webhook_batch import Delivery, WebhookRecords
from onsale.kernel.db import Database, create_pool
from tests.conftest import make_settings


def _delivery(event_id: str, outcome: str = "ignored") -> Delivery:
    payload = json.dumps({"id": event_id, "type": "payment_intent.succeeded",
                          "data": {"object": {"id": "pi_1", "amount": 2500}}})
    return Delivery(event_id, "payment_intent.succeeded", "pi_1", outcome, payload)


async def _database(db_url: str) -> Database:
    pool = await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=4))
    return Database(pool, acquire_timeout=5.0)


async def test_deliveries_that_arrive_together_share_a_transaction(
        conn: Any, db_url: str) -> None:
    db = await _database(db_url)
    records = WebhookRecords(db, max_batch=64, inflight=1)
    ids = [f"evt_{uuid.uuid4().hex}" for _ in range(20)]
    try:
        await records.record(db, _delivery(ids[0]))  # recorded before: its repeat is one
        stored = await asyncio.gather(
            *(records.record(db, _delivery(i)) for i in ids),
            records.record(db, _delivery(ids[5])))  # the same event twice in flight
    finally:
        await db.pool.close()
    assert stored[0] is False  # the duplicate of the first delivery
    assert stored[1:20] == [True] * 19
    assert stored[20] is False  # the later of two in-flight twins: in a later batch, a dup
    assert records.batches < records.elements  # shared
    rows = await conn.fetch("SELECT provider_event_id, outcome, payload, xmin::text AS x "
                            "FROM webhook_events WHERE provider_event_id = ANY($1)", ids)
    assert len(rows) == 20 and {r["outcome"] for r in rows} == {"ignored"}
    for r in rows:  # the delivery's JSON, as jsonb
        payload = json.loads(r["payload"]) if isinstance(r["payload"], str) else r["payload"]
        assert payload["id"] == r["provider_event_id"]
    assert len({r["x"] for r in rows}) < 20  # fewer transactions than deliveries


async def test_a_failed_batch_says_none_for_each(conn: Any, db_url: str) -> None:
    db = await _database(db_url)
    metrics = Metrics()
    records = WebhookRecords(db, metrics, max_batch=8, inflight=1)
    records.statement = ("SELECT 1 / 0 AS i, $1::text[], $2::text[], $3::text[], "
                         "$4::text[], $5::text[]")
    try:
        answers = await asyncio.gather(*(records.record(db, _delivery(f"evt_{n}_x"))
                                         for n in range(3)))
    finally:
        await db.pool.close()
    assert answers == [None, None, None]  # the caller records each alone
    assert metrics.webhook_batch_failures.labels(sqlstate="22012")._value.get() >= 1
    assert await conn.fetchval("SELECT count(*) FROM webhook_events "
                               "WHERE provider_event_id LIKE 'evt\\_%\\_x'") == 0
