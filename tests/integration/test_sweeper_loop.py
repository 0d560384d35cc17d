"""The sweeper as it runs in a process: expired holds released, metrics exposed."""

from __future__ import annotations

import asyncio
from typing import Any

from core.app import build_core_app
from tests.conftest import Api, audit_clean, hold, make_settings


async def test_running_sweeper_releases_and_reports(db_url: str, conn: Any) -> None:
    app = build_core_app(make_settings(db_url, sweep_interval=0.1), sweeper=True)
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
    assert "onsale_sweeper_released_seats_total 3.0" in metrics
    assert "onsale_hold_seconds_count 2.0" in metrics
    assert "onsale_sweeper_backlog_holds 0.0" in metrics
    assert "onsale_deadlock_retries_total 0.0" in metrics
    await audit_clean(conn)
