"""The test sequence of the seed's ReservationModel (003), over the HTTP API.

The model's logical clock becomes real database time with a 2-second hold.
``confirm`` is the sale step checkout runs after payment authorization
(onsale_confirm_hold); the checkout issue puts it behind POST /checkout.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest

from tests.conftest import Api, audit_clean, hold


async def confirm(conn: Any, hold_id: str, account: uuid.UUID) -> str:
    try:
        await conn.fetchval("SELECT onsale_confirm_hold($1, $2)", uuid.UUID(hold_id), account)
    except asyncpg.PostgresError as exc:
        return str(exc.args[0])
    return "confirmed"


async def test_reservation_model_sequence(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=2, hold_ttl_seconds=2)
    a1, a2 = 1, 2
    alice, bob, cara = [await api.account(conn) for _ in range(3)]
    async with api.client(alice) as al, api.client(bob) as bo, api.client(cara) as ca:
        # hold("A1", "alice", "op-1") == "op-1"; replay returns the same.
        op1 = await hold(al, event_id, [a1], key="op-1")
        assert op1.status_code == 201
        replay = await hold(al, event_id, [a1], key="op-1")
        assert replay.json()["hold_id"] == op1.json()["hold_id"]
        # bob cannot double-hold A1.
        assert (await hold(bo, event_id, [a1], key="op-2")).json()["code"] == "seats_unavailable"
        # confirm twice: confirmed both times, one order.
        assert await confirm(conn, op1.json()["hold_id"], alice) == "confirmed"
        assert await confirm(conn, op1.json()["hold_id"], alice) == "confirmed"
        assert await conn.fetchval("SELECT count(*) FROM orders") == 1
        assert (await al.get(f"/api/holds/{op1.json()['hold_id']}")).json()["status"] == \
            "CONFIRMED"
        # A confirmed seat is never resold.
        assert (await hold(bo, event_id, [a1], key="op-3")).json()["code"] == "seats_unavailable"
        # op-4 on A2 expires at its deadline.
        op4 = await hold(bo, event_id, [a2], key="op-4")
        assert op4.status_code == 201
        await asyncio.sleep(2.05)
        assert (await bo.get(f"/api/holds/{op4.json()['hold_id']}")).json()["status"] == "EXPIRED"
        # cara takes A2 after the expiry; op-4 stays expired.
        op5 = await hold(ca, event_id, [a2], key="op-5")
        assert op5.status_code == 201
        assert (await bo.get(f"/api/holds/{op4.json()['hold_id']}")).json()["status"] == "EXPIRED"
        # Replaying op-4 returns the original response and does not revive or extend it.
        replay4 = await hold(bo, event_id, [a2], key="op-4")
        assert replay4.json() == op4.json()
        assert (await bo.get(f"/api/holds/{op4.json()['hold_id']}")).json()["status"] == "EXPIRED"
        assert await confirm(conn, op4.json()["hold_id"], bob) == "hold_expired"
        assert await confirm(conn, op5.json()["hold_id"], cara) == "confirmed"
    sold = await conn.fetch(
        "SELECT seat_id, order_id FROM seat_inventory WHERE event_id = $1 AND status = 'SOLD'",
        event_id)
    assert len(sold) == 2
    await audit_clean(conn)


@pytest.mark.parametrize("sweep_first", [False, True])
async def test_confirm_after_deadline_is_refused(api: Api, conn: Any, sweep_first: bool) -> None:
    event_id = await api.create_event(seats=3, hold_ttl_seconds=1)
    alice = await api.account(conn)
    async with api.client(alice) as al:
        h = (await hold(al, event_id, [1])).json()
    await asyncio.sleep(1.05)
    if sweep_first:
        await conn.fetchrow("SELECT * FROM onsale_sweep(10)")
    assert await confirm(conn, h["hold_id"], alice) == "hold_expired"
    assert await conn.fetchval("SELECT count(*) FROM orders") == 0
    await audit_clean(conn)


async def test_confirm_that_waited_past_the_deadline_is_refused(
    api: Api, conn: Any, db_url: str,
) -> None:
    """A confirm that began before the deadline but waited on a seat lock until
    after it must not sell: the deadline is judged by the clock once locked."""
    event_id = await api.create_event(seats=5, hold_ttl_seconds=2)
    alice = await api.account(conn)
    async with api.client(alice) as al:
        h = (await hold(al, event_id, [1, 2])).json()
    blocker = await asyncpg.connect(db_url)
    confirmer = await asyncpg.connect(db_url)
    try:
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute("SELECT 1 FROM seat_inventory WHERE event_id = $1 AND seat_id = 1 "
                              "FOR UPDATE", event_id)
        task = asyncio.create_task(confirm(confirmer, h["hold_id"], alice))
        await asyncio.sleep(2.3)  # the deadline passes while the confirm waits
        assert not task.done()
        await tx.rollback()
        assert await task == "hold_expired"
    finally:
        await blocker.close()
        await confirmer.close()
    assert await conn.fetchval("SELECT count(*) FROM orders") == 0
    await audit_clean(conn)
