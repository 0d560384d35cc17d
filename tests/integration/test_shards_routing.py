"""Two events on two shards, on two real PostgreSQL servers (docs/scaling.md#routing):
holds racing on both at once, GA batches on both, reads and releases by id, the audit
clean on each shard; and a shard stopped mid-sale while the other sells on, then
started again and selling without a process restart."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from onsale.core.health import shards_ok
from onsale.core.shard_directory import add_shard
from onsale.embedded import EmbeddedPostgres, start_postgres
from onsale.kernel.db import init_connection
from tests.conftest import (
    ADMIN_TOKEN,
    Api,
    TwoShards,
    asyncpg_connect,
    audit_clean,
    build_api_app,
    hold,
    make_settings,
)
from tests.integration.test_ga_holds import floor, take


async def _accounts(conn: Any, n: int) -> list[uuid.UUID]:
    rows = await conn.fetch(
        "INSERT INTO accounts (email, password_hash) "
        "SELECT 'racer' || g || '-' || gen_random_uuid() || '@example.com', 'x' "
        "FROM generate_series(1, $1) g RETURNING account_id", n)
    return [r["account_id"] for r in rows]


async def _on(api: Api, shard: int, **body: Any) -> int:
    """An event placed on ``shard`` by the operator API."""
    return await api.create_event(shard=shard, **body)


async def _race(api: Api, accounts: list[uuid.UUID], event_id: int,
                seats: list[int]) -> list[httpx.Response]:
    async def one(account: uuid.UUID) -> httpx.Response:
        async with api.client(account) as c:
            await api.admission_token(account, event_id)  # joined before the race
            return await hold(c, event_id, seats)
    return list(await asyncio.gather(*(one(a) for a in accounts)))


async def test_holds_race_on_two_events_on_two_shards_at_once(
        sharded_api: Api, two_shards: TwoShards) -> None:
    api = sharded_api
    async with asyncpg_connect(two_shards.directory) as directory, \
            asyncpg_connect(two_shards.shard2) as shard2:
        first, second = await _on(api, 1, seats=20), await _on(api, 2, seats=20)
        accounts = await _accounts(directory, 40)
        shards = api.app.state.core.shards
        await shards.for_event(second)  # placed: known from the NOTIFY or one read
        reads = shards.directory_reads
        # Every account races for seats 6 and 7 of both events at the same moment.
        results = await asyncio.gather(_race(api, accounts, first, [6, 7]),
                                       _race(api, accounts, second, [7, 6]))
        assert shards.directory_reads == reads  # the cached placement routed all 80
        for event_id, responses in zip((first, second), results, strict=True):
            won = [r for r in responses if r.status_code == 201]
            assert len(won) == 1, [r.text for r in responses[:3]]
            assert won[0].json()["event_id"] == event_id
            assert {r.json()["code"] for r in responses if r.status_code != 201} == {
                "seats_unavailable"}
        one = results[0][[r.status_code for r in results[0]].index(201)].json()
        two = results[1][[r.status_code for r in results[1]].index(201)].json()
        # Each hold lives on its event's shard only, and its id names that shard.
        assert shards.placement.shard_of_id(uuid.UUID(two["hold_id"])) == 2
        assert await shard2.fetchval("SELECT count(*) FROM holds WHERE event_id = $1",
                                     second) == 1
        assert await directory.fetchval("SELECT count(*) FROM holds WHERE event_id = $1",
                                        second) == 0
        assert await directory.fetchval("SELECT count(*) FROM holds WHERE event_id = $1",
                                        first) == 1
        assert await shard2.fetchval("SELECT count(*) FROM seat_inventory "
                                     "WHERE event_id = $1 AND status = 'HELD'", second) == 2
        # Read and release by id alone: the id finds its shard.
        holder = next(a for a, r in zip(accounts, results[1], strict=True)
                      if r.status_code == 201)
        async with api.client(holder) as c:
            read = await c.get(f"/api/holds/{two['hold_id']}")
            assert read.status_code == 200 and read.json()["event_id"] == second
            released = await c.delete(f"/api/holds/{two['hold_id']}")
            assert released.status_code == 200 and released.json()["status"] == "RELEASED"
        assert await shard2.fetchval("SELECT count(*) FROM seat_inventory "
                                     "WHERE event_id = $1 AND status = 'AVAILABLE'", second) == 20
        assert one["event_id"] == first
        await audit_clean(directory)
        await audit_clean(shard2)


async def test_ga_batches_sell_on_both_shards(sharded_api: Api, two_shards: TwoShards) -> None:
    api = sharded_api
    batcher = api.app.state.core.ga_batcher
    assert batcher is not None  # GA holds go through the batcher here
    async with asyncpg_connect(two_shards.directory) as directory, \
            asyncpg_connect(two_shards.shard2) as shard2:
        events = [await _on(api, shard, seats=0, ga_tiers=[floor(capacity=30, stripes=2)])
                  for shard in (1, 2)]
        accounts = await _accounts(directory, 40)

        async def one(account: uuid.UUID, event_id: int) -> int:
            await api.admission_token(account, event_id)
            async with api.client(account) as c:
                return (await take(c, event_id, 1)).status_code

        before = batcher.batches
        codes = await asyncio.gather(*(one(a, e) for e in events for a in accounts))
        for n, event_id in enumerate(events):
            mine = codes[n * 40:(n + 1) * 40]
            assert mine.count(201) == 30, mine  # capacity, exactly, on each shard
            db = directory if n == 0 else shard2
            assert await db.fetchval("SELECT sum(available) FROM ga_buckets "
                                     "WHERE event_id = $1", event_id) == 0
        assert batcher.batches > before
        assert await directory.fetchval("SELECT count(*) FROM holds WHERE event_id = $1",
                                        events[1]) == 0
        await audit_clean(directory)
        await audit_clean(shard2)


@pytest.fixture
async def own_shard(db_url: str) -> AsyncIterator[tuple[EmbeddedPostgres, str]]:
    """Shard 2 on a server of this test's own, which it stops and starts again."""
    base = Path(tempfile.mkdtemp(prefix="onsale-test-down-"))
    server = start_postgres(base / "data", fast=True)
    try:
        admin = await asyncpg.connect(server.url)
        await admin.execute("CREATE DATABASE shard")
        await admin.close()
        dsn = server.url_for("shard")

        async def connect(url: str) -> Any:
            c = await asyncpg.connect(url)
            await init_connection(c)
            return c

        directory = await connect(db_url)
        try:
            await add_shard(directory, dsn, connect)
        finally:
            await directory.close()
        yield server, dsn
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


async def test_a_shard_that_is_down_stops_only_its_own_events(
        db_url: str, own_shard: tuple[EmbeddedPostgres, str], valkey: Any,
        redis_client: Any) -> None:
    server, dsn = own_shard
    settings = make_settings(db_url, redis_url=valkey.url, db_acquire_timeout=0.5,
                             db_request_timeout_ms=1000)
    app = build_api_app(settings)
    async with app.router.lifespan_context(app):
        api = Api(app)
        shards = app.state.core.shards
        async with asyncpg_connect(db_url) as directory:
            up, down = await _on(api, 1, seats=30), await _on(api, 2, seats=30)
            accounts = await _accounts(directory, 6)
            for a in accounts:
                for e in (up, down):
                    await api.admission_token(a, e)
            async with api.client(accounts[0]) as c:
                assert (await hold(c, down, [1])).status_code == 201
            server.stop()  # mid-sale
            async with api.client(accounts[1]) as c:
                refused = await hold(c, down, [2])
                assert refused.status_code == 503
                assert refused.json()["code"] == "inventory_unavailable"
                assert (await hold(c, up, [2])).status_code == 201  # the other sells on
                # an order list shows what the shards that answer hold, and says so
                listed = await c.get("/api/orders")
                assert listed.status_code == 200, listed.text
                assert listed.json()["complete"] is False
            assert await shards_ok(shards) == {"2": False}  # the admitter pauses its events
            async with api.client() as c:
                ready = await c.get("/readyz")
            assert ready.status_code == 200
            assert ready.json()["status"] == "degraded"
            assert {k: v for k, v in ready.json()["checks"].items() if k != "valkey"} == {
                "database": "ok", "shard 2": "unavailable"}

            start_postgres(server.data_dir, server.port, fast=True)  # back, same address

            async def sells() -> bool:
                async with api.client(accounts[2]) as c:
                    r = await hold(c, down, [3])
                return r.status_code == 201

            for _ in range(300):  # the breaker lets a trial through, then closes
                if await sells():
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("shard 2 did not sell again after it came back")
            assert await shards_ok(shards) == {"2": True}
            await audit_clean(directory)
        async with asyncpg_connect(dsn) as shard2:
            assert await shard2.fetchval("SELECT count(*) FROM holds WHERE event_id = $1",
                                         down) == 2
            await audit_clean(shard2)


async def test_queue_settings_changed_in_the_directory_reach_the_events_shard(
        sharded_api: Api, two_shards: TwoShards) -> None:
    """The edge writes an event's queue settings in the directory; the event document
    is read on the event's shard, whose copy follows (docs/scaling.md#placing-an-event)."""
    api = sharded_api
    event_id = await _on(api, 2, seats=10, onsale_at="2030-01-01T00:00:00Z")
    async with api.client() as c:
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        r = await c.patch(f"/api/ops/events/{event_id}/queue", headers=auth,
                          json={"queue_policy": "random"})
        assert r.status_code == 200, r.text
        doc = (await c.get(f"/api/events/{event_id}")).json()
    assert doc["queue"]["policy"] == "random"
    assert doc["queue"]["draw"]["commitment"]
    async with asyncpg_connect(two_shards.shard2) as shard2:
        assert await shard2.fetchval("SELECT queue_policy FROM events WHERE event_id = $1",
                                     event_id) == "random"


async def test_the_operators_console_reads_each_event_on_its_shard(
        sharded_api: Api, two_shards: TwoShards) -> None:
    """The dashboard names the event's shard and counts its open payments there; the
    change capture is reported per shard; the audit runs on every shard and a
    violation's sample names its shard."""
    api = sharded_api
    event_id = await _on(api, 2, seats=10)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with asyncpg_connect(two_shards.shard2) as shard2:
        account = await api.account(shard2)  # any account row: holds name no FK
        held = await shard2.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k', 'd', $3)",
                                     event_id, account, [1])
        assert held["status_code"] == 201, dict(held)
        await shard2.fetchrow(
            "SELECT * FROM onsale_checkout_begin($1, $2, 'ck', 'd', 'card_4242', 600, 0, 30)",
            uuid.UUID(held["body"]["hold_id"]), account)
        async with api.client() as c:
            doc = (await c.get(f"/api/ops/events/{event_id}/dashboard", headers=auth)).json()
            assert doc["shard"] == 2
            assert doc["payments"]["pending"] == 1  # read on shard 2, not the directory
            assert doc["cdc"]["shards"]["2"]["slot"] == "onsale_seatmap_s2"
            # A sold seat with no order behind it, on shard 2 only.
            await shard2.execute("ALTER TABLE seat_inventory DISABLE TRIGGER USER")
            await shard2.execute("UPDATE seat_inventory SET status = 'SOLD', order_id = $2 "
                                 "WHERE event_id = $1 AND seat_id = 9", event_id, uuid.uuid4())
            await shard2.execute("ALTER TABLE seat_inventory ENABLE TRIGGER USER")
            audit = (await c.get("/api/ops/audit?fresh=1", headers=auth)).json()
        bad = [check for check in audit["checks"] if not check["ok"]]
        assert bad and all(row["shard"] == 2 for check in bad for row in check["sample"])
        assert {c["name"] for c in bad} >= {"sold_seats_point_to_confirmed_orders"}
