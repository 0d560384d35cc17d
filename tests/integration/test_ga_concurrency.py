"""General admission under real concurrency against a real PostgreSQL: many connections
racing for the last places of a tier, and holds, expiries, releases, checkouts and
rebalances interleaved across the expiry boundary while an auditor watches."""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import asyncpg
import pytest

from onsale.core.audit import format_report, run_audit
from onsale.core.ga_batch import GABatcher
from onsale.core.ga_quota import rebalance_all
from onsale.core.hold_rules import GARequest, request_digest
from onsale.core.hold_store import create_batched_hold, create_hold
from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.core.sweeper import sweep_once
from onsale.kernel.db import Database, create_pool, init_connection
from onsale.kernel.problems import Problem
from tests.conftest import Api, audit_clean, make_settings
from tests.integration.test_hold_concurrency import _accounts


async def _connections(db_url: str, n: int) -> list[Any]:
    conns = await asyncio.gather(*(asyncpg.connect(db_url) for _ in range(n)))
    for c in conns:
        await init_connection(c)
    return list(conns)


async def attempt(c: Any, metrics: Metrics, event_id: int, account: uuid.UUID,
                  quantity: int, key: str | None = None) -> tuple[str, Any]:
    request = GARequest(1, quantity)
    key = key or uuid.uuid4().hex
    try:
        outcome = await create_hold(c, metrics, event_id, account, key,
                                    request_digest("t", str(event_id), request), request)
    except Problem as p:
        return p.code, p
    return "held", outcome


async def test_500_connections_race_for_the_last_10_places(
        api: Api, conn: Any, db_url: str) -> None:
    event_id = await api.create_event(seats=1, ga_tiers=[
        {"name": "Floor", "price_minor": 100, "capacity": 10, "stripes": 4}])
    accounts = await _accounts(conn, 500)
    conns = await _connections(db_url, 500)
    go = asyncio.Event()
    metrics = Metrics()
    rng = random.Random(5)
    wants = [rng.choice((1, 1, 2)) for _ in accounts]

    async def one(c: Any, account: uuid.UUID, quantity: int) -> tuple[str, Any]:
        await go.wait()
        return await attempt(c, metrics, event_id, account, quantity)

    try:
        tasks = [asyncio.create_task(one(c, a, q))
                 for c, a, q in zip(conns, accounts, wants, strict=True)]
        await asyncio.sleep(0.2)
        go.set()
        results = await asyncio.gather(*tasks)
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    won = [r for code, r in results if code == "held"]
    lost = [r for code, r in results if code != "held"]
    assert {code for code, _ in results} <= {"held", "sold_out", "insufficient_quantity"}
    assert sum(o.body["ga"]["quantity"] for o in won) == 10  # exactly the last 10
    assert all(p.status == 409 and p.extra["available"] in (0, 1) for p in lost)
    row = await conn.fetchrow("SELECT sum(available) AS a, sum(held) AS h, min(available) AS m "
                              "FROM ga_buckets WHERE event_id = $1", event_id)
    assert (row["a"], row["h"]) == (0, 10) and row["m"] >= 0
    held = await conn.fetchval("SELECT sum(quantity) FROM ga_hold_places WHERE status = 'HELD'")
    assert held == 10
    await audit_clean(conn)


async def test_a_replayed_key_under_a_race_creates_one_hold(
        api: Api, conn: Any, db_url: str) -> None:
    event_id = await api.create_event(seats=1, ga_tiers=[
        {"name": "Floor", "price_minor": 100, "capacity": 50, "stripes": 2}])
    (account,) = await _accounts(conn, 1)
    conns = await _connections(db_url, 20)
    metrics = Metrics()
    try:
        results = await asyncio.gather(*(attempt(c, metrics, event_id, account, 2, key="same")
                                         for c in conns))
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    bodies = {str(r.body["hold_id"]) for code, r in results if code == "held"}
    assert len(bodies) == 1 and all(code == "held" for code, _ in results)
    assert await conn.fetchval("SELECT count(*) FROM holds") == 1
    assert await conn.fetchval("SELECT sum(held) FROM ga_buckets") == 2
    await audit_clean(conn)


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batched"])
async def test_holds_expiries_releases_checkouts_and_rebalances_interleave(
        api: Api, conn: Any, db_url: str, batched: bool) -> None:
    """Two seconds of everything at once on one hot tier, across the 1 s expiry
    boundary; an auditor checks every invariant in its own snapshot meanwhile.
    ``batched``: the holds go through two processes' batchers (core/ga_batch.py), as
    the HTTP route sends them."""
    event_id = await api.create_event(
        seats=1, hold_ttl_seconds=1, max_tickets_per_account=100,
        ga_tiers=[{"name": "Floor", "price_minor": 100, "capacity": 60, "stripes": 4,
                   "max_per_hold": 4}])
    accounts = await _accounts(conn, 24)
    conns = await _connections(db_url, 30)
    metrics = Metrics()
    deadline = asyncio.get_running_loop().time() + 2.5
    violations: list[str] = []
    counts = {"held": 0, "released": 0, "sold": 0, "swept": 0, "rebalanced": 0, "audits": 0}

    dbs = [Database(await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=3)),
                    acquire_timeout=5.0) for _ in range(2 if batched else 0)]
    batchers = [GABatcher(db, max_batch=8, inflight=2) for db in dbs]

    def running() -> bool:
        return asyncio.get_running_loop().time() < deadline

    async def hold(c: Any, account: uuid.UUID, quantity: int) -> tuple[str, Any]:
        if not batched:
            return await attempt(c, metrics, event_id, account, quantity)
        request = GARequest(1, quantity)
        n = hash(account) % 2
        try:
            outcome = await create_batched_hold(dbs[n], batchers[n], metrics, event_id, account,
                                           uuid.uuid4().hex,
                                           request_digest("t", str(event_id), request), request)
        except Problem as p:
            return p.code, p
        return "held", outcome

    async def shopper(c: Any, account: uuid.UUID, rng: random.Random) -> None:
        q = queries("holds")
        while running():
            code, outcome = await hold(c, account, rng.randint(1, 4))
            if code != "held":
                await asyncio.sleep(0.01)
                continue
            counts["held"] += 1
            hold_id = uuid.UUID(outcome.body["hold_id"])
            turn = counts["held"] % 3  # each end in turn (timing random): every run has all
            if turn == 1:
                await c.execute(q["release_hold"], hold_id, account)
                counts["released"] += 1
            elif turn == 2:
                await asyncio.sleep(rng.random() * 0.4)
                if await _checkout(c, hold_id, account):
                    counts["sold"] += 1
            # else: left to expire (and to be swept or reclaimed)

    async def sweeper(c: Any) -> None:
        while running():
            counts["swept"] += (await sweep_once(c, 50)).seats_released
            await asyncio.sleep(0.05)

    async def rebalancer(c: Any) -> None:
        set_stripes = queries("ga")["set_stripes"]
        n = 4
        while running():
            counts["rebalanced"] += await rebalance_all(c, metrics)
            n = 6 if n == 4 else 4
            await c.fetchval(set_stripes, event_id, 1, n)  # on sale: more, then fewer
            await asyncio.sleep(0.1)

    async def auditor(c: Any) -> None:
        while running():
            results = await run_audit(c)
            counts["audits"] += 1
            if any(results.values()):
                violations.append(format_report(results))
            await asyncio.sleep(0.02)

    rng = random.Random(11)
    try:
        await asyncio.gather(
            *(shopper(c, accounts[i % len(accounts)], random.Random(rng.random()))
              for i, c in enumerate(conns[:24])),
            sweeper(conns[24]), rebalancer(conns[25]), auditor(conns[26]), auditor(conns[27]))
    finally:
        await asyncio.gather(*(c.close() for c in conns))
        for db in dbs:
            await db.pool.close()
    assert not violations, violations[0]
    assert counts["audits"] >= 4 and counts["held"] > 10 and counts["sold"] > 0
    if batched:
        assert sum(b.batches for b in batchers) > 0
    assert counts["released"] > 0
    # Holds crossed their deadline: ended by the sweeper or by a hold attempt that
    # found the tier short (whichever came first).
    assert await conn.fetchval("SELECT count(*) FROM holds WHERE status = 'EXPIRED'") > 0
    await asyncio.sleep(1.1)  # every remaining hold past its deadline
    await sweep_once(conn, 1000)
    row = await conn.fetchrow("SELECT sum(available) AS a, sum(held) AS h, sum(sold) AS s "
                              "FROM ga_buckets WHERE event_id = $1", event_id)
    sold = await conn.fetchval("SELECT coalesce(sum(quantity), 0) FROM ga_order_items gi "
                               "JOIN orders o ON o.order_id = gi.order_id "
                               "WHERE o.status = 'CONFIRMED' AND gi.valid")
    assert (row["h"], row["s"]) == (0, sold) and row["a"] + row["s"] == 60
    await audit_clean(conn)


async def _checkout(c: Any, hold_id: uuid.UUID, account: uuid.UUID) -> bool:
    """Checkout's two database steps with an approving provider in between
    (onsale_checkout_begin, then the authorization applied); False when the hold
    expired first."""
    try:
        row = await c.fetchrow(
            "SELECT order_id, operation_id FROM onsale_checkout_begin($1, $2, $3, $4, $5, "
            "600, 0, 30)", hold_id, account, uuid.uuid4().hex, "d", "pm_card_visa")
    except asyncpg.PostgresError as exc:
        if getattr(exc, "sqlstate", "") == "OS409":
            return False
        raise
    result = await c.fetchval(
        "SELECT onsale_payment_apply($1, 'AUTHORIZED', $2, NULL, NULL, 'test', 30)",
        row["operation_id"], f"pi_{uuid.uuid4().hex[:12]}")
    return bool(result["order_status"] == "CONFIRMED")
