"""The sweeper as it runs in a process: expired holds released, metrics exposed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from onsale.compose import Tiers, app_for
from onsale.embedded import EmbeddedValkey
from tests.conftest import Api, audit_clean, hold, make_settings


async def test_running_sweeper_releases_and_reports(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: Any) -> None:
    settings = make_settings(db_url, sweep_interval=0.1, redis_url=valkey.url)
    app = app_for(Tiers(core=True, background=True, edge=True), settings)
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await api.create_event(seats=10, hold_ttl_seconds=1)
        async with api.client(await api.account(conn)) as c:
            assert (await hold(c, event_id, [1, 2, 3])).status_code == 201
            assert (await hold(c, event_id, [3])).status_code == 409
            held = await conn.fetchval(
                "SELECT count(*) FROM seat_inventory WHERE event_id = $1 AND status = 'HELD'",
                event_id)
            assert held == 3
            deadline = asyncio.get_running_loop().time() + 5
            while asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.1)
                status = await conn.fetchval("SELECT status FROM holds")
                if status == "EXPIRED":
                    break
            assert status == "EXPIRED"
            metrics = (await c.get("/metrics")).text
    assert await conn.fetchval(
        "SELECT count(*) FROM seat_inventory WHERE event_id = $1 AND status = 'AVAILABLE'",
        event_id) == 10
    assert 'onsale_hold_outcomes_total{code="created"} 1.0' in metrics
    assert 'onsale_hold_outcomes_total{code="seats_unavailable"} 1.0' in metrics
    assert 'onsale_sweeper_released_seats_total{shard="1"} 3.0' in metrics
    assert "onsale_hold_seconds_count 2.0" in metrics
    assert 'onsale_sweeper_backlog_holds{shard="1"} 0.0' in metrics
    assert "onsale_deadlock_retries_total 0.0" in metrics
    await audit_clean(conn)



@pytest.mark.parametrize("batch_max", [1, 32], ids=["alone", "batched"])
async def test_lock_waits_are_recorded_for_winners_and_losers_that_locked(
    db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: Any,
    batch_max: int,
) -> None:
    """Two shoppers pass the unlocked check and queue on the same row lock: both
    waits are observed (the loser's too). A third, who fails fast on the
    committed state, is not. With the process's seat batcher on (issue 29) one wait:
    the second shopper either waits in the batcher's queue behind the first one's
    batch and then fails fast, or shares its batch and loses to it there, answered as
    it would be alone after the first (failing fast, no wait)."""
    import asyncpg

    app = app_for(Tiers(core=True, edge=True),
                  make_settings(db_url, redis_url=valkey.url, seat_batch_max=batch_max))
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await api.create_event(seats=10)
        a, b, c = [await api.account(conn) for _ in range(3)]
        blocker = await asyncpg.connect(db_url)
        try:
            tx = blocker.transaction()
            await tx.start()
            await blocker.execute(
                "SELECT 1 FROM seat_inventory WHERE event_id = $1 AND seat_id = 4 FOR UPDATE",
                event_id)
            async with api.client(a) as ca, api.client(b) as cb:
                racing = [asyncio.create_task(hold(x, event_id, [4])) for x in (ca, cb)]
                await asyncio.sleep(0.3)
                await tx.rollback()
                results = await asyncio.gather(*racing)
            assert sorted(r.status_code for r in results) == [201, 409]
            batcher = app.state.core.seat_batcher
            assert (batcher is None) == (batch_max == 1)
            locked = 2 if batcher is None else 1
            async with api.client(c) as cc:
                assert (await hold(cc, event_id, [4])).status_code == 409
        finally:
            await blocker.close()
        histogram = api.app.state.core.metrics.lock_wait
        observed = sum(bucket.get() for bucket in histogram._buckets)
    assert observed == locked
