"""Real concurrency against a real PostgreSQL: many connections racing."""

from __future__ import annotations

import asyncio
import itertools
import random
import uuid
from typing import Any

import asyncpg
import pytest

from onsale.core.hold_rules import SeatsRequest, request_digest
from onsale.core.hold_store import create_hold
from onsale.core.metrics import Metrics
from onsale.kernel.db import init_connection
from onsale.kernel.problems import Problem
from tests.conftest import Api, audit_clean, hold


async def _accounts(conn: Any, n: int) -> list[uuid.UUID]:
    rows = await conn.fetch(
        "INSERT INTO accounts (email, password_hash) "
        "SELECT 'racer' || g || '-' || gen_random_uuid() || '@example.com', 'x' "
        "FROM generate_series(1, $1) g RETURNING account_id", n,
    )
    return [r["account_id"] for r in rows]


async def test_500_connections_race_for_one_seat(api: Api, conn: Any, db_url: str) -> None:
    event_id = await api.create_event(seats=10)
    accounts = await _accounts(conn, 500)
    conns = await asyncio.gather(*(asyncpg.connect(db_url) for _ in range(500)))
    for c in conns:
        await init_connection(c)
    go = asyncio.Event()
    metrics = Metrics()
    request = SeatsRequest((7,))

    async def attempt(c: Any, account: uuid.UUID) -> str:
        await go.wait()
        key = uuid.uuid4().hex
        try:
            outcome = await create_hold(c, metrics, event_id, account, key,
                                        request_digest("t", str(event_id), request), request)
        except Problem as p:
            return p.code
        return str(outcome.body["hold_id"])

    try:
        tasks = [asyncio.create_task(attempt(c, a)) for c, a in zip(conns, accounts, strict=True)]
        await asyncio.sleep(0.2)
        go.set()
        results = await asyncio.gather(*tasks)
    finally:
        await asyncio.gather(*(c.close() for c in conns))

    winners = [r for r in results if r != "seats_unavailable"]
    assert len(winners) == 1, results[:5]
    assert results.count("seats_unavailable") == 499
    row = await conn.fetchrow(
        "SELECT status, hold_id FROM seat_inventory WHERE event_id = $1 AND seat_id = 7", event_id)
    assert row["status"] == "HELD" and str(row["hold_id"]) == winners[0]
    assert await conn.fetchval("SELECT count(*) FROM holds") == 1
    assert await conn.fetchval("SELECT count(*) FROM idempotency_keys") == 1
    await audit_clean(conn)


@pytest.mark.parametrize("rounds", [3])
async def test_overlapping_sets_in_different_orders(
    api: Api, conn: Any, rounds: int,
) -> None:
    """Every request gets all three seats or none; no deadlock reaches a client."""
    event_id = await api.create_event(seats=40)
    pool_seats = list(range(1, 9))
    triples = list(itertools.combinations(pool_seats, 3))
    rng = random.Random(7)
    accounts = await _accounts(conn, 240)
    for _ in range(rounds):
        async def attempt(account: uuid.UUID) -> Any:
            seats = list(rng.choice(triples))
            rng.shuffle(seats)  # the client's order is arbitrary
            async with api.client(account) as c:
                return seats, await hold(c, event_id, seats)

        results = await asyncio.gather(*(attempt(a) for a in accounts))
        statuses = sorted({r.status_code for _, r in results})
        assert set(statuses) <= {201, 409}, [r.text for _, r in results if r.status_code >= 500][:3]
        won = [(seats, r.json()) for seats, r in results if r.status_code == 201]
        assert won, "someone must win each round"
        held: set[int] = set()
        for seats, body in won:
            got = [s["seat_id"] for s in body["seats"]]
            assert sorted(got) == sorted(seats)  # all of them, not some
            assert held.isdisjoint(got), "a seat was held twice"
            held.update(got)
        for _, r in results:
            if r.status_code == 409:
                assert r.json()["code"] == "seats_unavailable"
                assert r.json()["unavailable_seat_ids"]
        db_held = await conn.fetch(
            "SELECT seat_id, hold_id FROM seat_inventory WHERE event_id = $1 AND status = 'HELD'",
            event_id)
        assert {r["seat_id"] for r in db_held} == held
        await audit_clean(conn)
        # Release everything and race again.
        for _, body in won:
            await conn.execute("SELECT onsale_release($1, account_id) FROM holds "
                               "WHERE hold_id = $1", uuid.UUID(body["hold_id"]))
    deadlocks = api.app.state.core.metrics.deadlock_retries._value.get()
    assert deadlocks == 0  # ordered locking: no deadlock even needed retrying


async def test_racing_holds_sweeper_and_best_available_never_overlap(
    api: Api, conn: Any, db_url: str,
) -> None:
    """Short holds expire while others race for the same seats and the sweeper
    runs: no two live holds ever cover the same seat at the same instant."""
    from onsale.core.sweeper import sweep_once

    event_id = await api.create_event(seats=30, hold_ttl_seconds=1)
    accounts = await _accounts(conn, 60)
    rng = random.Random(11)
    stop = asyncio.get_running_loop().time() + 4.0
    sweeper_conn = await asyncpg.connect(db_url)
    codes: list[int] = []

    async def shopper(account: uuid.UUID) -> None:
        async with api.client(account) as c:
            while asyncio.get_running_loop().time() < stop:
                if rng.random() < 0.2:
                    r = await c.post(f"/api/events/{event_id}/holds",
                                     json={"best_available": {"quantity": 2, "together": True}},
                                     headers={"Idempotency-Key": uuid.uuid4().hex})
                else:
                    r = await hold(c, event_id, rng.sample(range(1, 13), rng.randint(1, 4)))
                codes.append(r.status_code)
                await asyncio.sleep(rng.random() * 0.05)

    async def sweeper() -> None:
        while asyncio.get_running_loop().time() < stop:
            await sweep_once(sweeper_conn, 5)
            await asyncio.sleep(0.05)

    try:
        await asyncio.gather(sweeper(), *(shopper(a) for a in accounts))
    finally:
        await sweeper_conn.close()
    assert set(codes) <= {201, 409}
    assert codes.count(201) > 10
    # Intervals of holds sharing a seat must not overlap (database time). A hold's
    # interval starts at its claim, expires_at - the TTL (the claim sets the deadline
    # from the clock), not at created_at: that is its transaction's start, which can be
    # before the previous hold's deadline when the claim waited for the sweeper to free
    # the seat after it.
    overlaps = await conn.fetch("""
        SELECT a.hold_id, b.hold_id, s
        FROM holds a JOIN holds b ON a.event_id = b.event_id AND a.hold_id < b.hold_id,
             LATERAL unnest(a.seat_ids) s
        WHERE s = ANY (b.seat_ids)
          AND a.expires_at - interval '1 second' < b.expires_at
          AND b.expires_at - interval '1 second' < a.expires_at""")
    assert overlaps == []
    await audit_clean(conn)


@pytest.mark.parametrize("body", [{"seat_ids": [3, 4]},
                                  {"seat_ids": [5, 6, 7, 8]},
                                  {"best_available": {"quantity": 2, "together": True}},
                                  {"best_available": {"quantity": 4, "together": True}}])
async def test_concurrent_twins_with_one_key_get_one_hold(
    api: Api, conn: Any, body: dict[str, Any],
) -> None:
    """A client that retries while its first request is still in flight (same key,
    same body, 20 copies at once) gets one hold, and every copy sees it, even
    when two copies together would exceed the ticket limit (4 + 4 > 6)."""
    event_id = await api.create_event(seats=30)
    account = (await _accounts(conn, 1))[0]
    async with api.client(account) as c:
        responses = await asyncio.gather(*(
            c.post(f"/api/events/{event_id}/holds", json=body,
                   headers={"Idempotency-Key": "twin"}) for _ in range(20)))
    assert {r.status_code for r in responses} == {201}, [r.text for r in responses][:3]
    assert len({r.json()["hold_id"] for r in responses}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in responses) == 19
    assert await conn.fetchval("SELECT count(*) FROM holds") == 1
    await audit_clean(conn)
