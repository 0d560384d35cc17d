"""Checkouts, webhooks, the reconciler and tickets for events on two shards, with real
processes (core, a worker, an edge and the provider simulator over HTTP) and two real
PostgreSQL servers (docs/scaling.md#routing): each order, its payment operations,
webhook records and tickets land on its event's shard, and the audit is clean on each."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from onsale.embedded import EmbeddedPostgres
from onsale.kernel.shards import load_placement
from tests.conftest import ADMIN_TOKEN, asyncpg_connect, audit_clean, fresh_database
from tests.integration.test_checkout import checkout, held, new_account, order, settle
from tests.stack import APPROVE, THREE_DS, Stack, eventually


@pytest.fixture(scope="module")
async def sharded(pg: EmbeddedPostgres, template_db: str, pg2: EmbeddedPostgres,
                  shard_template: str,
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Stack, str]]:
    """A directory (shard 1) and shard 2 on the second server, served by a core, a
    worker, an edge and the simulator."""
    directory = await fresh_database(pg, template_db)
    shard2 = await fresh_database(pg2, shard_template)
    async with asyncpg_connect(shard2) as conn:
        stamped = await conn.fetchval("SELECT stamped_since FROM shard_identity")
    async with asyncpg_connect(directory) as conn:
        await conn.execute("INSERT INTO shards (shard_id, dsn, stamped_since) VALUES (2, $1, $2)",
                           shard2, stamped)
    stack = Stack(directory, tmp_path_factory.mktemp("sharded"))
    try:
        stack.start_psp()
        stack.start_core()
        stack.start_worker(stack.ensure_redis())
        yield stack, shard2
    finally:
        stack.stop()


async def _event(stack: Stack, shard: int) -> int:
    async with stack.client() as c:
        r = await c.post("/api/ops/events", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                         json={"name": f"On shard {shard}", "seats": 40, "shard": shard,
                               "queue_policy": "passthrough"})
    assert r.status_code == 201, r.text
    return int(r.json()["event_id"])


async def test_checkouts_webhooks_and_tickets_land_on_each_events_shard(
        sharded: tuple[Stack, str]) -> None:
    stack, shard2_url = sharded
    async with asyncpg_connect(stack.db_url) as directory, \
            asyncpg_connect(shard2_url) as shard2:
        events = {1: await _event(stack, 1), 2: await _event(stack, 2)}
        dbs = {1: directory, 2: shard2}
        account = await new_account(directory)
        orders: dict[int, list[str]] = {1: [], 2: []}
        async with stack.client(account) as c:
            for shard, event_id in events.items():
                # An approved card: sold in the request, captured after it.
                body = (await checkout(c, await held(c, event_id, [1, 2]), APPROVE)).json()
                await settle(c, body, ("CONFIRMED", "CAPTURED"))
                orders[shard].append(body["order_id"])
                # 3-D Secure: finished by the provider's webhook, which finds the shard
                # from the operation id in the PaymentIntent's metadata.
                body = (await checkout(c, await held(c, event_id, [5]), THREE_DS)).json()
                assert body["payment_status"] == "REQUIRES_ACTION"
                async with httpx.AsyncClient(timeout=30) as browser:
                    await browser.post(body["next_action"]["redirect_to_url"]["url"],
                                       data={"result": "succeed"})

                async def captured(order_id: str = body["order_id"]) -> bool:
                    o = await order(c, order_id)
                    return (o["order_status"], o["payment_status"]) == ("CONFIRMED", "CAPTURED")
                await eventually(captured)
                orders[shard].append(body["order_id"])
            # A lost response on shard 2: converged by the webhook or shard 2's reconciler.
            await stack.set_faults(rules=[{"op": "authorize", "fault": "lost_response",
                                           "count": 1}])
            body = (await checkout(c, await held(c, events[2], [9]), APPROVE)).json()

            async def converged() -> bool:
                o = await order(c, body["order_id"])
                return (o["order_status"], o["payment_status"]) == ("CONFIRMED", "CAPTURED")
            await eventually(converged)
            orders[2].append(body["order_id"])
            await stack.clear_faults()

        async with asyncpg_connect(stack.db_url) as conn:
            placement = await load_placement(conn)
        made_by = placement.shard_of_id
        for shard, ids in orders.items():
            other = dbs[3 - shard]
            for order_id in map(uuid.UUID, ids):
                assert made_by(order_id) == shard  # the id names the shard that made it
                db = dbs[shard]
                assert await db.fetchval("SELECT event_id FROM orders WHERE order_id = $1",
                                         order_id) == events[shard]
                assert await other.fetchval("SELECT count(*) FROM orders WHERE order_id = $1",
                                            order_id) == 0
                assert await db.fetchval(
                    "SELECT count(*) FROM payment_operations WHERE order_id = $1 "
                    "AND kind = 'CAPTURE' AND status = 'SUCCEEDED'", order_id) == 1

                async def ticketed(db: Any = db, order_id: uuid.UUID = order_id) -> bool:
                    return bool(await db.fetchval(
                        "SELECT count(*) > 0 FROM tickets WHERE order_id = $1", order_id))
                await eventually(ticketed)  # the worker's one consumer, on the order's shard
        # The 3-D Secure webhooks were recorded where their operation lives.
        assert await shard2.fetchval("SELECT count(*) FROM webhook_events") > 0
        assert await directory.fetchval(
            "SELECT count(*) FROM payment_operations p JOIN orders o USING (order_id) "
            "WHERE o.event_id = $1", events[2]) == 0
        await audit_clean(directory)
        await audit_clean(shard2)
