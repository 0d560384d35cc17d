"""The test sequence of the seed's ReservationModel (003), over the HTTP API.

The model's logical clock becomes real database time with 2-second holds, and
``confirm`` is a checkout with the simulator's approving test card.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest

from tests.conftest import Api, audit_clean, hold
from tests.integration.test_checkout import (  # noqa: F401  (fixtures)
    checkout,
    db,
    new_account,
    new_event,
    stack,
)
from tests.stack import APPROVE, Stack


async def confirm(client: Any, hold_id: str, key: str) -> str:
    r = await checkout(client, hold_id, APPROVE, key=key)
    if r.status_code >= 400:
        return str(r.json()["code"])
    body = r.json()
    assert body["order_status"] == "CONFIRMED", body
    return "confirmed"


async def test_reservation_model_sequence(stack: Stack, db: Any) -> None:  # noqa: F811
    event_id = await new_event(stack, seats=2, hold_ttl_seconds=2)
    a1, a2 = 1, 2
    alice, bob, cara = [await new_account(db) for _ in range(3)]
    async with stack.client(alice) as al, stack.client(bob) as bo, stack.client(cara) as ca:
        # hold("A1", "alice", "op-1") == "op-1"; replay returns the same.
        op1 = await hold(al, event_id, [a1], key="op-1")
        assert op1.status_code == 201
        replay = await hold(al, event_id, [a1], key="op-1")
        assert replay.json()["hold_id"] == op1.json()["hold_id"]
        # bob cannot double-hold A1.
        assert (await hold(bo, event_id, [a1], key="op-2")).json()["code"] == "seats_unavailable"
        # confirm twice: confirmed both times, one order.
        assert await confirm(al, op1.json()["hold_id"], "pay-1") == "confirmed"
        assert await confirm(al, op1.json()["hold_id"], "pay-1") == "confirmed"
        assert await db.fetchval("SELECT count(*) FROM orders WHERE event_id = $1", event_id) == 1
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
        assert await confirm(bo, op4.json()["hold_id"], "pay-4") == "hold_expired"
        assert await confirm(ca, op5.json()["hold_id"], "pay-5") == "confirmed"
    sold = await db.fetch(
        "SELECT seat_id, order_id FROM seat_inventory WHERE event_id = $1 AND status = 'SOLD'",
        event_id)
    assert len(sold) == 2
    await audit_clean(db)


@pytest.mark.parametrize("sweep_first", [False, True])
async def test_confirm_after_deadline_is_refused(stack: Stack, db: Any,  # noqa: F811
                                                 sweep_first: bool) -> None:
    event_id = await new_event(stack, seats=3, hold_ttl_seconds=1)
    alice = await new_account(db)
    async with stack.client(alice) as al:
        h = (await hold(al, event_id, [1])).json()
        await asyncio.sleep(1.05)
        if sweep_first:
            await db.fetchrow("SELECT * FROM onsale_sweep(10)")
        assert await confirm(al, h["hold_id"], uuid.uuid4().hex) == "hold_expired"
    assert await db.fetchval("SELECT count(*) FROM orders WHERE event_id = $1", event_id) == 0
    await audit_clean(db)


async def test_checkout_that_waited_past_the_deadline_is_refused(
    api: Api, conn: Any, db_url: str,
) -> None:
    """A checkout that began before the deadline but waited on a seat lock until
    after it must not start a payment: the deadline is judged by the clock once
    the seats are locked."""
    event_id = await api.create_event(seats=5, hold_ttl_seconds=2)
    alice = await api.account(conn)
    async with api.client(alice) as al:
        h = (await hold(al, event_id, [1, 2])).json()
    blocker = await asyncpg.connect(db_url)
    buyer = await asyncpg.connect(db_url)

    async def begin() -> str:
        try:
            await buyer.fetchrow(
                "SELECT * FROM onsale_checkout_begin($1, $2, 'k', 'd', 'card_4242', 600, 0, 30)",
                uuid.UUID(h["hold_id"]), alice)
        except asyncpg.PostgresError as exc:
            return str(exc.args[0])
        return "begun"

    try:
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute("SELECT 1 FROM seat_inventory WHERE event_id = $1 AND seat_id = 1 "
                              "FOR UPDATE", event_id)
        task = asyncio.create_task(begin())
        await asyncio.sleep(2.3)  # the deadline passes while the checkout waits
        assert not task.done()
        await tx.rollback()
        assert await task == "hold_expired"
    finally:
        await blocker.close()
        await buyer.close()
    assert await conn.fetchval("SELECT count(*) FROM orders") == 0
    await audit_clean(conn)
