"""An account's orders (issue 28, "My orders"): ``GET /api/orders`` and the ``/orders``
page, with real processes (core, a worker, an edge, the provider simulator) and two
real PostgreSQL servers, so the orders of one account are on two shards: only the
account's own, newest first across both shards, a page at a time by the cursor, bad
parameters refused, and the page showing each order with a link to it. The audit is
clean on each shard at the end."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.conftest import asyncpg_connect, audit_clean
from tests.integration.test_checkout import checkout, held, new_account, settle
from tests.integration.test_shards_payments import _event, sharded  # noqa: F401 (fixture)
from tests.stack import APPROVE, DECLINE, Stack


async def listed(c: httpx.AsyncClient, url: str = "/api/orders") -> dict[str, Any]:
    r = await c.get(url)
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store"
    doc: dict[str, Any] = r.json()
    return doc


async def test_an_accounts_orders_from_every_shard_newest_first_a_page_at_a_time(
        sharded: tuple[Stack, str]) -> None:  # noqa: F811
    stack, shard2_url = sharded
    async with asyncpg_connect(stack.db_url) as directory, \
            asyncpg_connect(shard2_url) as shard2:
        events = {1: await _event(stack, 1), 2: await _event(stack, 2)}
        me, someone_else, nobody = [await new_account(directory) for _ in range(3)]
        bought: list[str] = []  # oldest first
        async with stack.client(me) as c:
            for shard, seats in ((1, [11]), (2, [11, 12]), (1, [13]), (2, [14])):
                body = (await checkout(c, await held(c, events[shard], seats), APPROVE)).json()
                await settle(c, body, ("CONFIRMED", "CAPTURED"))
                bought.append(body["order_id"])
            declined = (await checkout(c, await held(c, events[1], [15]), DECLINE)).json()
            bought.append(declined["order_id"])
        async with stack.client(someone_else) as c:
            theirs = (await checkout(c, await held(c, events[2], [20]), APPROVE)).json()
            await settle(c, theirs, ("CONFIRMED", "CAPTURED"))

        async with stack.client(me) as c:
            everything = await listed(c)
            assert everything["complete"] is True and everything["next"] is None
            assert [o["order_id"] for o in everything["orders"]] == bought[::-1]
            newest, second = everything["orders"][0], everything["orders"][3]
            assert newest["payment_status"] == "DECLINED" and newest["event_id"] == events[1]
            assert second["event_id"] == events[2] and second["event_name"] == "On shard 2"
            assert [s["seat_id"] for s in second["seats"]] == [11, 12]
            assert second["order_status"] == "CONFIRMED" and second["ticket_count"] in (0, 2)
            assert theirs["order_id"] not in {o["order_id"] for o in everything["orders"]}

            pages, url = [], "/api/orders?limit=2"
            while url:
                doc = await listed(c, url)
                assert len(doc["orders"]) <= 2
                pages.append([o["order_id"] for o in doc["orders"]])
                url = doc["next"]
            assert pages == [bought[4:2:-1], bought[2:0:-1], bought[:1]]

            for bad in ("limit=0", "limit=101", "limit=two", "limit=2&limit=3",
                        "before=yesterday", "before=1." + "0" * 36, "page=2"):
                r = await c.get(f"/api/orders?{bad}")
                assert r.status_code == 400 and r.json()["code"] == "invalid_request", bad

            page = (await c.get("/orders")).text
            assert 'href="/orders">My orders</a>' in page
            for order_id in bought:
                assert f'href="/orders/{order_id}"' in page
            assert "Card declined" in page and "On shard 2" in page
            assert "Section" in page and "row" in page  # the seats in words
            older = (await c.get("/orders?before=nonsense"))
            assert older.status_code == 400

        async with stack.client(someone_else) as c:
            assert [o["order_id"] for o in (await listed(c))["orders"]] == [theirs["order_id"]]
        async with stack.client(nobody) as c:
            assert (await listed(c))["orders"] == []
            assert "You have no orders yet" in (await c.get("/orders")).text
        async with stack.client() as anonymous:
            r = await anonymous.get("/api/orders")
            assert r.status_code == 401 and r.json()["code"] == "authentication_required"
            r = await anonymous.get("/orders", follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"].endswith("/signin?next=/orders")
        await audit_clean(directory)
        await audit_clean(shard2)


async def test_someone_elses_order_id_is_not_found(sharded: tuple[Stack, str]) -> None:  # noqa: F811
    stack, _ = sharded
    async with asyncpg_connect(stack.db_url) as directory:
        me, them = await new_account(directory), await new_account(directory)
    event_id = await _event(stack, 1)
    async with stack.client(me) as c:
        mine = (await checkout(c, await held(c, event_id, [30]), APPROVE)).json()
    async with stack.client(them) as c:
        assert (await c.get(f"/api/orders/{mine['order_id']}")).status_code == 404
        assert (await listed(c))["orders"] == []
        assert str(uuid.UUID(mine["order_id"])) not in (await c.get("/orders")).text
