"""The outbox relay against real Postgres and Valkey: order, late commits,
racing relays, a crash between XADD and commit, pruning, metrics."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg
import pytest
import redis.asyncio

from onsale.core.metrics import Metrics
from onsale.core.outbox_relay import (
    STREAM,
    prune_published,
    relay_once,
    relay_pass,
    run_relay,
    update_backlog,
)
from onsale.embedded import free_port
from onsale.kernel.db import create_pool, init_connection
from onsale.kernel.tasks import stop_background
from onsale.kernel.timefmt import utc_iso
from tests.conftest import make_settings

Redis = redis.asyncio.Redis
INSERT_ROWS = """
INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
SELECT 7, gen_random_uuid(), 'hold.created', jsonb_build_object('n', g, 'tag', $2::text)
FROM generate_series(1, $1) AS g
RETURNING outbox_id
"""


async def add_rows(conn: Any, n: int, tag: str = "x") -> list[int]:
    return [r["outbox_id"] for r in await conn.fetch(INSERT_ROWS, n, tag)]


async def streamed_ids(r: Redis) -> list[int]:
    return [int(fields[b"outbox_id"]) for _, fields in await r.xrange(STREAM)]


async def connect(db_url: str) -> Any:
    c = await asyncpg.connect(db_url)
    await init_connection(c)
    return c


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 30.0) -> None:
    """Poll a condition with a generous deadline (no timing assertions)."""
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


def sample(metrics: Metrics, name: str) -> float:
    """A figure; one of the per-shard loops' is shard 1's (a Metrics is shard 1's)."""
    value = metrics.registry.get_sample_value(name, {"shard": "1"})
    if value is None:
        value = metrics.registry.get_sample_value(name)
    assert value is not None, name
    return value


async def cancel(*tasks: asyncio.Task[Any]) -> None:
    await stop_background(tasks)


async def test_rows_published_in_order_with_all_fields(conn: Any, redis_client: Redis) -> None:
    ids = await add_rows(conn, 1203)
    metrics = Metrics()
    assert await relay_pass(conn, redis_client, metrics, batch=500) == 1203
    entries = await redis_client.xrange(STREAM)
    assert [int(f[b"outbox_id"]) for _, f in entries] == ids
    row = await conn.fetchrow("SELECT * FROM outbox WHERE outbox_id = $1", ids[41])
    fields = {k.decode(): v.decode() for k, v in entries[41][1].items()}
    assert set(fields) == {"outbox_id", "event_id", "aggregate_id", "type", "payload",
                           "created_at"}
    assert fields["event_id"] == "7"
    assert fields["aggregate_id"] == str(row["aggregate_id"])
    assert fields["type"] == "hold.created"
    assert json.loads(fields["payload"]) == row["payload"] == {"n": 42, "tag": "x"}
    assert fields["created_at"] == utc_iso(row["created_at"])
    assert await conn.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0
    assert sample(metrics, "onsale_outbox_published_total") == 1203

    assert await relay_pass(conn, redis_client, metrics, batch=500) == 0
    assert await redis_client.xlen(STREAM) == 1203


async def test_late_commit_is_neither_skipped_nor_overtaken(
    db_url: str, conn: Any, redis_client: Redis,
) -> None:
    a, b = await connect(db_url), await connect(db_url)
    try:
        tx_a = a.transaction()
        await tx_a.start()
        [id_a] = await add_rows(a, 1, "A")          # inserted first: the lower id
        async with b.transaction():
            [id_b] = await add_rows(b, 1, "B")      # commits first
        assert id_a < id_b
        assert await relay_pass(conn, redis_client) == 0  # A still running: B waits
        assert await streamed_ids(redis_client) == []
        await tx_a.commit()
        assert await relay_pass(conn, redis_client) == 2
        assert await streamed_ids(redis_client) == [id_a, id_b]
    finally:
        await a.close()
        await b.close()


async def test_lower_id_with_younger_writer_is_not_overtaken(
    db_url: str, conn: Any, redis_client: Redis,
) -> None:
    """T2 takes its xid first (as a hold does with its idempotency row), then
    waits for T1's seat lock; T1 writes the lower outbox id and commits first.
    While an unrelated T0 (xid between them) runs, T2's row is old enough but
    T1's is not: the relay must publish neither, then T1 before T2."""
    t0, t1, t2 = [await connect(db_url) for _ in range(3)]
    try:
        tx2, tx0, tx1 = t2.transaction(), t0.transaction(), t1.transaction()
        for tx in (tx2, tx0, tx1):
            await tx.start()
        for c in (t2, t0, t1):  # xids in this order: t2 < t0 < t1
            await c.fetchval("SELECT pg_current_xact_id()")
        [id1] = await add_rows(t1, 1, "T1")
        await tx1.commit()
        [id2] = await add_rows(t2, 1, "T2")
        await tx2.commit()
        assert await relay_pass(conn, redis_client) == 0
        assert await streamed_ids(redis_client) == []
        await tx0.commit()
        assert await relay_pass(conn, redis_client) == 2
        assert await streamed_ids(redis_client) == [id1, id2]
    finally:
        for c in (t0, t1, t2):
            await c.close()


async def test_two_racing_relays_publish_each_row_once_in_order(
    db_url: str, conn: Any, redis_client: Redis,
) -> None:
    pools = [await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=3))
             for _ in range(2)]
    metrics = [Metrics(), Metrics()]
    written: list[int] = []

    async def writer() -> None:
        w = await connect(db_url)
        try:
            for i in range(60):
                written.extend(await add_rows(w, 50, f"w{i}"))
        finally:
            await w.close()

    relays = [asyncio.create_task(run_relay(p, redis_client, m, interval=0.01, batch=200))
              for p, m in zip(pools, metrics, strict=True)]
    try:
        await writer()

        async def drained() -> bool:
            return not await conn.fetchval(
                "SELECT count(*) FROM outbox WHERE published_at IS NULL")

        await eventually(drained)
        await cancel(*relays)
        assert await streamed_ids(redis_client) == sorted(written)
        assert len(written) == 3000
        assert await conn.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0
        assert sum(sample(m, "onsale_outbox_published_total") for m in metrics) == 3000
    finally:
        await cancel(*relays)
        for p in pools:
            await p.close()


async def test_crash_between_xadd_and_commit_republishes(
    db_url: str, conn: Any, redis_client: Redis,
) -> None:
    [first] = await add_rows(conn, 1)

    async def update_fails(ids: Sequence[int]) -> None:
        assert list(ids) == [first]
        raise RuntimeError("crash after XADD, before the commit")

    relay_conn = await connect(db_url)
    try:
        with pytest.raises(RuntimeError, match="crash after XADD"):
            await relay_once(relay_conn, redis_client, after_publish=update_fails)
        assert await streamed_ids(redis_client) == [first]
        assert await conn.fetchval("SELECT published_at FROM outbox") is None

        # The same crash as a cancelled task (process killed at that point).
        parked = asyncio.Event()

        async def park(ids: Sequence[int]) -> None:
            parked.set()
            await asyncio.Event().wait()

        task = asyncio.create_task(relay_once(relay_conn, redis_client, after_publish=park))
        await asyncio.wait_for(parked.wait(), 30)
        await cancel(task)
        assert await streamed_ids(redis_client) == [first, first]
        assert await conn.fetchval("SELECT published_at FROM outbox") is None
    finally:
        await relay_conn.close()

    assert await relay_pass(conn, redis_client) == 1
    assert await streamed_ids(redis_client) == [first, first, first]  # at least once
    assert await conn.fetchval("SELECT published_at FROM outbox") is not None
    assert await relay_pass(conn, redis_client) == 0


async def test_backlog_gauges_drop_to_zero_after_relaying(
    db_url: str, conn: Any, redis_client: Redis,
) -> None:
    await add_rows(conn, 25)
    metrics = Metrics()
    await update_backlog(conn, metrics)
    assert sample(metrics, "onsale_outbox_backlog_rows") == 25
    assert sample(metrics, "onsale_outbox_oldest_unpublished_seconds") >= 0
    pool = await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=2))
    task = asyncio.create_task(run_relay(pool, redis_client, metrics, interval=0.05))
    try:
        async def drained() -> bool:
            return (sample(metrics, "onsale_outbox_backlog_rows") == 0
                    and sample(metrics, "onsale_outbox_published_total") == 25)

        await eventually(drained)
        assert sample(metrics, "onsale_outbox_oldest_unpublished_seconds") == 0
        assert sample(metrics, "onsale_outbox_relay_errors_total") == 0
    finally:
        await cancel(task)
        await pool.close()


async def test_redis_down_keeps_the_backlog_and_loses_nothing(
    db_url: str, conn: Any, redis_client: Redis,
) -> None:
    ids = await add_rows(conn, 10)
    metrics = Metrics()
    pool = await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=2))
    dead = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0")
    task = asyncio.create_task(run_relay(pool, dead, metrics, interval=0.01))
    try:
        async def failing() -> bool:
            return (sample(metrics, "onsale_outbox_relay_errors_total") >= 2
                    and sample(metrics, "onsale_outbox_backlog_rows") == 10)

        await eventually(failing)
    finally:
        await cancel(task)
        await pool.close()
        await dead.aclose()
    assert await conn.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 10
    assert await relay_pass(conn, redis_client) == 10
    assert await streamed_ids(redis_client) == ids


async def test_prune_deletes_only_published_rows_past_retention(conn: Any) -> None:
    ids = await add_rows(conn, 30)
    week = "8 days"
    # Old published rows, one recent published row and one unpublished row among them.
    await conn.execute(
        f"UPDATE outbox SET published_at = now() - interval '{week}' WHERE outbox_id = ANY($1)",
        ids[:25])
    await conn.execute("UPDATE outbox SET published_at = now() WHERE outbox_id = $1", ids[3])
    await conn.execute("UPDATE outbox SET published_at = NULL WHERE outbox_id = $1", ids[7])
    deleted, finished = await prune_published(conn, 7 * 86400, batch=4)
    assert (deleted, finished) == (23, True)
    left = [r["outbox_id"] for r in await conn.fetch("SELECT outbox_id FROM outbox ORDER BY 1")]
    assert left == [ids[3], ids[7], *ids[25:]]
