"""The ticket consumer against real Postgres and Valkey: issue once per item,
duplicates issue nothing, ``wait`` stays pending until captured, cancelled
orders are acknowledged, a republished batch still issues once."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import pytest
import redis.asyncio

from onsale.compose import build_app
from onsale.core.metrics import Metrics
from onsale.core.outbox_relay import STREAM, relay_once, relay_pass
from onsale.core.tickets import (
    GROUP,
    consume_once,
    ensure_group,
    reclaim_once,
    run_ticket_consumer,
)
from onsale.embedded import EmbeddedValkey
from onsale.kernel.db import create_pool
from tests.conftest import make_settings
from tests.integration.test_outbox_relay import cancel, eventually, sample

Redis = redis.asyncio.Redis


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[Any]:
    p = await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=4))
    try:
        yield p
    finally:
        await p.close()


async def make_order(conn: Any, seat_ids: Sequence[int], *, status: str = "CONFIRMED",
                     payment_status: str = "CAPTURED") -> uuid.UUID:
    """An event, account, hold, order and order items, written directly, plus
    the order.confirmed outbox row that the sale transaction would write."""
    event_id = await conn.fetchval(
        "INSERT INTO events (name, starts_at, onsale_at, hold_ttl_seconds,"
        " max_tickets_per_account, max_seats_per_hold, seat_count)"
        " VALUES ('Ticket night', now() + interval '30 days', now(), 300, 6, 6, 100)"
        " RETURNING event_id")
    account_id = await conn.fetchval(
        "INSERT INTO accounts (email, password_hash) VALUES ($1, 'x') RETURNING account_id",
        f"t{uuid.uuid4().hex[:12]}@example.com")
    hold_id = uuid.uuid4()
    amount = 2500 * len(seat_ids)
    await conn.execute(
        "INSERT INTO holds (hold_id, event_id, account_id, idempotency_key, status, seat_ids,"
        " seats, seat_count, amount_minor, currency, expires_at)"
        " VALUES ($1, $2, $3, $4, 'CONFIRMED', $5::int[], '[]', $6, $7, 'USD',"
        "         now() + interval '5 minutes')",
        hold_id, event_id, account_id, uuid.uuid4().hex, list(seat_ids), len(seat_ids), amount)
    order_id: uuid.UUID = await conn.fetchval(
        "INSERT INTO orders (hold_id, event_id, account_id, status, amount_minor, currency,"
        " payment_status) VALUES ($1, $2, $3, $4, $5, 'USD', $6) RETURNING order_id",
        hold_id, event_id, account_id, status, amount, payment_status)
    await conn.executemany(
        "INSERT INTO order_items (order_id, event_id, seat_id, price_minor)"
        " VALUES ($1, $2, $3, 2500)",
        [(order_id, event_id, s) for s in seat_ids])
    await conn.execute(
        "INSERT INTO outbox (event_id, aggregate_id, event_type, payload)"
        " VALUES ($1, $2, 'order.confirmed', $3)",
        event_id, order_id, {"order_id": str(order_id), "hold_id": str(hold_id),
                             "seat_ids": list(seat_ids), "amount_minor": amount})
    return order_id


async def tickets_of(conn: Any, order_id: uuid.UUID) -> list[tuple[int, str]]:
    rows = await conn.fetch(
        "SELECT seat_id, code FROM tickets WHERE order_id = $1 ORDER BY seat_id", order_id)
    return [(r["seat_id"], r["code"]) for r in rows]


async def pending(r: Redis) -> int:
    return int((await r.xpending(STREAM, GROUP))["pending"])


async def test_captured_order_gets_one_ticket_per_item_and_duplicates_nothing(
    conn: Any, pool: Any, redis_client: Redis,
) -> None:
    await conn.execute(
        "INSERT INTO outbox (event_id, aggregate_id, event_type, payload)"
        " VALUES (1, gen_random_uuid(), 'hold.created', '{}')")
    order_id = await make_order(conn, [11, 12, 13])
    assert await relay_pass(conn, redis_client) == 2
    metrics = Metrics()
    await ensure_group(redis_client)
    await ensure_group(redis_client)  # BUSYGROUP is fine
    assert await consume_once(pool, redis_client, metrics, "c1", block_ms=None) == [
        "ignored", "issued"]
    issued = await tickets_of(conn, order_id)
    assert [seat for seat, _ in issued] == [11, 12, 13]
    assert len({code for _, code in issued}) == 3
    assert await pending(redis_client) == 0
    assert sample(metrics, "onsale_tickets_issued_total") == 3

    # The same message delivered again (a duplicate XADD) issues nothing new.
    [(_, fields)] = [e for e in await redis_client.xrange(STREAM)
                     if e[1][b"type"] == b"order.confirmed"]
    await redis_client.xadd(STREAM, fields)
    assert await consume_once(pool, redis_client, metrics, "c2", block_ms=None) == ["duplicate"]
    assert await tickets_of(conn, order_id) == issued
    assert await pending(redis_client) == 0
    assert sample(metrics, "onsale_tickets_issued_total") == 3


async def test_wait_stays_pending_until_captured_then_the_retry_issues(
    conn: Any, pool: Any, redis_client: Redis,
) -> None:
    order_id = await make_order(conn, [5, 6], payment_status="AUTHORIZED")
    assert await relay_pass(conn, redis_client) == 1
    metrics = Metrics()
    await ensure_group(redis_client)
    assert await consume_once(pool, redis_client, metrics, "crashed", block_ms=None) == ["wait"]
    assert await pending(redis_client) == 1
    # Not idle long enough to be taken over yet.
    assert await reclaim_once(pool, redis_client, metrics, "other", min_idle_ms=600_000) == []

    # A running consumer keeps retrying the entry (taking it over from
    # "crashed") and never acknowledges it while the payment is not captured.
    task = asyncio.create_task(
        run_ticket_consumer(pool, redis_client, metrics, consumer="live", min_idle_ms=50))
    try:
        async def retried() -> bool:
            [entry] = await redis_client.xpending_range(STREAM, GROUP, "-", "+", 10)
            return bool(entry["consumer"] == b"live" and entry["times_delivered"] >= 3)

        await eventually(retried)
        assert await tickets_of(conn, order_id) == []
        assert await pending(redis_client) == 1

        await conn.execute(
            "UPDATE orders SET payment_status = 'CAPTURED' WHERE order_id = $1", order_id)

        async def issued() -> bool:
            return (len(await tickets_of(conn, order_id)) == 2
                    and await pending(redis_client) == 0
                    and sample(metrics, "onsale_ticket_consumer_pending") == 0)

        await eventually(issued)
        assert sample(metrics, "onsale_tickets_issued_total") == 2
        assert sample(metrics, "onsale_ticket_consumer_errors_total") == 0
    finally:
        await cancel(task)


async def test_cancelled_order_is_acknowledged_without_tickets(
    conn: Any, pool: Any, redis_client: Redis,
) -> None:
    order_id = await make_order(conn, [1], status="CANCELLED", payment_status="VOIDED")
    await relay_pass(conn, redis_client)
    # A malformed order.confirmed is dropped (acknowledged) and counted.
    await redis_client.xadd(STREAM, {"type": "order.confirmed", "payload": "{}"})
    metrics = Metrics()
    await ensure_group(redis_client)
    assert await consume_once(pool, redis_client, metrics, "c1", block_ms=None) == [
        "cancelled", "malformed"]
    assert await tickets_of(conn, order_id) == []
    assert await pending(redis_client) == 0
    assert sample(metrics, "onsale_ticket_consumer_errors_total") == 1


async def test_republished_after_a_relay_crash_issues_once(
    db_url: str, conn: Any, pool: Any, redis_client: Redis,
) -> None:
    order_id = await make_order(conn, [21, 22, 23, 24])

    async def crash(ids: Sequence[int]) -> None:
        raise RuntimeError("crash after XADD, before the commit")

    with pytest.raises(RuntimeError):
        await relay_once(conn, redis_client, after_publish=crash)
    assert await relay_pass(conn, redis_client) == 1
    entries = await redis_client.xrange(STREAM)
    assert len(entries) == 2 and entries[0][1] == entries[1][1]

    metrics = Metrics()
    task = asyncio.create_task(run_ticket_consumer(pool, redis_client, metrics, min_idle_ms=50))
    try:
        async def both_handled() -> bool:
            groups = await redis_client.xinfo_groups(STREAM)
            return bool(groups and groups[0]["last-delivered-id"] == entries[1][0]
                        and groups[0]["pending"] == 0)

        await eventually(both_handled)
    finally:
        await cancel(task)
    assert [seat for seat, _ in await tickets_of(conn, order_id)] == [21, 22, 23, 24]
    assert sample(metrics, "onsale_tickets_issued_total") == 4


async def test_consumer_recreates_its_group_after_the_stream_is_lost(
    conn: Any, pool: Any, redis_client: Redis,
) -> None:
    metrics = Metrics()
    task = asyncio.create_task(run_ticket_consumer(pool, redis_client, metrics, min_idle_ms=50,
                                                   interval=0.01))
    try:
        async def grouped() -> bool:
            return bool(await redis_client.exists(STREAM)
                        and await redis_client.xinfo_groups(STREAM))

        await eventually(grouped)
        await redis_client.delete(STREAM)  # e.g. Valkey restarted without its data
        order_id = await make_order(conn, [3])
        await relay_pass(conn, redis_client)

        async def issued() -> bool:
            return len(await tickets_of(conn, order_id)) == 1

        await eventually(issued)
    finally:
        await cancel(task)
    assert sample(metrics, "onsale_ticket_consumer_errors_total") >= 1  # NOGROUP, then healed
    payload = json.loads((await redis_client.xrange(STREAM))[0][1][b"payload"])
    assert payload["order_id"] == str(order_id)


async def test_worker_role_relays_and_issues(
    db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: Redis,
) -> None:
    app = build_app("worker", make_settings(db_url, redis_url=valkey.url))
    async with app.router.lifespan_context(app):
        metrics: Metrics = app.state.core.metrics
        order_id = await make_order(conn, [8, 9])

        async def done() -> bool:
            # The consumer may see the entry before the relay commits and counts it.
            return (len(await tickets_of(conn, order_id)) == 2
                    and sample(metrics, "onsale_outbox_published_total") == 1)

        await eventually(done)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as c:
            text = (await c.get("/metrics")).text
    assert 'onsale_outbox_published_total{shard="1"} 1.0' in text
    assert "onsale_tickets_issued_total 2.0" in text
    assert await conn.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0


async def test_the_orders_of_one_read_are_issued_in_one_transaction(
    conn: Any, pool: Any, redis_client: Redis,
) -> None:
    """Issue 29: a read's orders go to the database together (one commit), each with
    its own outcome: issued, wait (not captured, left pending), cancelled, and a
    repeated message of an order issued once."""
    captured = [await make_order(conn, [n, n + 1]) for n in (1, 11, 21)]
    waiting = await make_order(conn, [31], payment_status="AUTHORIZED")
    failed = await make_order(conn, [41], status="FAILED", payment_status="VOIDED")
    assert await relay_pass(conn, redis_client) == 5
    [first] = [e for e in await redis_client.xrange(STREAM)
               if e[1][b"aggregate_id"] == str(captured[0]).encode()]
    await redis_client.xadd(STREAM, first[1])  # a duplicate delivery in the same read
    await ensure_group(redis_client)
    metrics = Metrics()
    verdicts = await consume_once(pool, redis_client, metrics, "c1", block_ms=None)
    assert verdicts == ["issued", "issued", "issued", "wait", "cancelled", "duplicate"]
    assert sample(metrics, "onsale_tickets_issued_total") == 6
    for order_id in captured:
        assert len(await tickets_of(conn, order_id)) == 2
    assert await tickets_of(conn, waiting) == [] and await tickets_of(conn, failed) == []
    assert await pending(redis_client) == 1  # the waiting order's, for a later read
    # one transaction wrote them all
    assert await conn.fetchval("SELECT count(DISTINCT xmin::text) FROM tickets "
                               "WHERE order_id = ANY($1)", captured) == 1
