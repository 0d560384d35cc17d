"""Capture answers applied together (core/capture_batch.py, apply_batch) against a real
PostgreSQL: each answer its own result, the same as alone, in one transaction; a batch
that fails leaves each to be applied alone."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from onsale.core.capture_batch import CaptureRecords
from onsale.core.metrics import Metrics
from onsale.core.payment_rules import Outcome
from onsale.kernel.db import Database, create_pool
from tests.conftest import Api, audit_clean, make_settings
from tests.integration.test_hold_concurrency import _accounts


async def _sold(conn: Any, event_id: int, account: uuid.UUID, seat: int) -> uuid.UUID:
    """A seat held, checked out and authorized (the sale committed): its capture's id."""
    hold = await conn.fetchrow("SELECT body FROM onsale_hold($1, $2, $3, 'd', $4)",
                               event_id, account, uuid.uuid4().hex, [seat])
    begun = await conn.fetchrow(
        "SELECT order_id, operation_id FROM onsale_checkout_begin($1, $2, $3, 'd', "
        "'pm_card_visa', 600, 0, 30)", uuid.UUID(hold["body"]["hold_id"]), account,
        uuid.uuid4().hex)
    result = await conn.fetchval(
        "SELECT onsale_payment_apply($1, 'AUTHORIZED', $2, NULL, NULL, 'test', 30)",
        begun["operation_id"], f"pi_{uuid.uuid4().hex[:12]}")
    assert result["order_status"] == "CONFIRMED", result
    return uuid.UUID(result["follow_up"]["operation_id"])


async def _database(db_url: str) -> Database:
    pool = await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=4))
    return Database(pool, acquire_timeout=5.0)


async def test_capture_answers_that_arrive_together_share_a_transaction(
        api: Api, conn: Any, db_url: str) -> None:
    event_id = await api.create_event(seats=20)
    accounts = await _accounts(conn, 8)
    captures = [await _sold(conn, event_id, a, n + 1) for n, a in enumerate(accounts)]
    refs = {c: await conn.fetchval("SELECT a.provider_ref FROM payment_operations p "
                                   "JOIN payment_operations a ON a.operation_id = "
                                   "p.parent_operation_id WHERE p.operation_id = $1", c)
            for c in captures}
    db = await _database(db_url)
    metrics = Metrics()
    records = CaptureRecords(db, 30, metrics, max_batch=64, inflight=1)
    try:
        results = await asyncio.gather(*(
            records.apply(db, c, Outcome("CAPTURED", refs[c]), "response") for c in captures))
    finally:
        await db.pool.close()
    assert all(r is not None and r["payment_status"] == "CAPTURED" and r["applied"]
               for r in results), results
    assert records.batches < records.elements
    assert sum(s.value for m in metrics.capture_batch_size.collect() for s in m.samples
               if s.name.endswith("_count")) == records.batches
    rows = await conn.fetch("SELECT status, xmin::text AS x FROM payment_operations "
                            "WHERE operation_id = ANY($1)", captures)
    assert {r["status"] for r in rows} == {"SUCCEEDED"}
    assert len({r["x"] for r in rows}) < len(captures)  # fewer transactions than answers
    assert await conn.fetchval("SELECT count(*) FROM orders WHERE event_id = $1 "
                               "AND payment_status = 'CAPTURED'", event_id) == 8
    await audit_clean(conn)


async def test_a_failed_batch_says_none_for_each(api: Api, conn: Any, db_url: str) -> None:
    event_id = await api.create_event(seats=5)
    (account,) = await _accounts(conn, 1)
    capture = await _sold(conn, event_id, account, 1)
    db = await _database(db_url)
    records = CaptureRecords(db, 30, max_batch=8, inflight=1)
    records.statement = ("SELECT 1 / 0 AS i, $1::uuid[], $2::text[], $3::text[], $4::text[], "
                         "$5::text[], $6::text[], $7::int")
    try:
        assert await records.apply(db, capture, Outcome("CAPTURED", "pi_x"), "response") is None
    finally:
        await db.pool.close()
    assert await conn.fetchval("SELECT status FROM payment_operations "
                               "WHERE operation_id = $1", capture) == "PENDING"
