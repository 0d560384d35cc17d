"""Batched GA holds (core/ga_batch.py, onsale_ga_hold_batch) against a real PostgreSQL:
each element gets the answer it would get alone, what a batch cannot settle runs alone,
and racing batches from several processes never sell a place twice."""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

import asyncpg

from onsale.core.ga_batch import GABatcher
from onsale.core.hold_rules import GARequest, request_digest
from onsale.core.hold_store import create_batched_hold
from onsale.core.metrics import Metrics
from onsale.kernel.db import Database, create_pool
from onsale.kernel.problems import Problem
from tests.conftest import Api, audit_clean, make_settings
from tests.integration.test_hold_concurrency import _accounts

T = TypeVar("T")

BATCH = ("SELECT i, status_code, body, replayed FROM onsale_ga_hold_batch("
         "$1, $2::smallint, $3::uuid[], $4::text[], $5::text[], $6::integer[]) ORDER BY i")


async def _event(api: Api, capacity: int = 100, stripes: int = 1, **extra: Any) -> int:
    tier = {"name": "Floor", "price_minor": 100, "capacity": capacity, "stripes": stripes,
            "max_per_hold": 6, **{k: v for k, v in extra.items() if k == "max_per_account"}}
    body = {k: v for k, v in extra.items() if k != "max_per_account"}
    return await api.create_event(seats=1, ga_tiers=[tier], **body)


async def _batch(conn: Any, event_id: int, accounts: list[uuid.UUID], quantities: list[int],
                 keys: list[str] | None = None, digests: list[str] | None = None,
                 tier_id: int = 1) -> list[dict[str, Any]]:
    keys = keys or [uuid.uuid4().hex for _ in accounts]
    digests = digests or ["d"] * len(accounts)
    rows = await conn.fetch(BATCH, event_id, tier_id, accounts, keys, digests, quantities)
    return [dict(r) for r in rows]


async def _counts(conn: Any, event_id: int) -> tuple[int, int]:
    row = await conn.fetchrow("SELECT sum(available) AS a, sum(held) AS h FROM ga_buckets "
                              "WHERE event_id = $1", event_id)
    return int(row["a"]), int(row["h"])


async def test_a_batch_holds_for_every_account_on_one_stripe(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=100, stripes=4)
    accounts = await _accounts(conn, 5)
    rows = await _batch(conn, event_id, accounts, [1, 2, 3, 4, 5])
    assert [r["status_code"] for r in rows] == [201] * 5
    assert [r["body"]["ga"]["quantity"] for r in rows] == [1, 2, 3, 4, 5]
    assert not any(r["replayed"] for r in rows)
    assert await _counts(conn, event_id) == (85, 15)
    holds = await conn.fetch("SELECT h.hold_id, h.account_id, h.seat_count, p.stripe "
                             "FROM holds h JOIN ga_hold_places p USING (hold_id) "
                             "WHERE h.event_id = $1", event_id)
    assert {r["account_id"] for r in holds} == set(accounts)
    assert len({r["stripe"] for r in holds}) == 1  # the batch's one stripe
    assert {str(r["hold_id"]) for r in holds} == {r["body"]["hold_id"] for r in rows}
    assert await conn.fetchval("SELECT count(*) FROM outbox WHERE event_type = 'hold.created' "
                               "AND event_id = $1", event_id) == 5
    await audit_clean(conn)


async def test_elements_beyond_the_stripe_go_to_the_spread_stage(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=10, stripes=1)
    accounts = await _accounts(conn, 4)
    rows = await _batch(conn, event_id, accounts, [4, 5, 2, 1])
    # 4 and 5 fit in 10; the 2 does not fit in the 1 left, the 1 does.
    assert [r["status_code"] for r in rows] == [201, 201, 0, 201]
    assert rows[2]["body"] is None
    assert await _counts(conn, event_id) == (0, 10)
    await audit_clean(conn)


async def test_what_a_batch_cannot_settle_is_left_to_the_single_path(
        api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=50, stripes=2)
    a, b, c = await _accounts(conn, 3)
    # the second element of an account, and a quantity above max_per_hold
    rows = await _batch(conn, event_id, [a, a, b, c], [1, 1, 7, 2])
    assert [r["status_code"] for r in rows] == [201, None, None, 201]
    # an unknown tier, and a sale not open yet: every element alone
    assert {r["status_code"] for r in await _batch(conn, event_id, [a, b], [1, 1],
                                                   tier_id=9)} == {None}
    later = await _event(api, onsale_at="2099-01-01T00:00:00Z")
    assert {r["status_code"] for r in await _batch(conn, later, [a, b], [1, 1])} == {None}
    assert await _counts(conn, event_id) == (47, 3)


async def test_replays_and_key_conflicts_in_a_batch(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=50, stripes=2)
    a, b = await _accounts(conn, 2)
    (first,) = await _batch(conn, event_id, [a], [2], keys=["k1"], digests=["d1"])
    assert first["status_code"] == 201
    # the same key and request: the stored answer; the same key, another request: alone
    rows = await _batch(conn, event_id, [a, b], [2, 3], keys=["k1", "k2"], digests=["d1", "d"])
    assert (rows[0]["status_code"], rows[0]["replayed"]) == (201, True)
    assert rows[0]["body"] == first["body"]
    assert rows[1]["status_code"] == 201
    (conflict,) = await _batch(conn, event_id, [a], [2], keys=["k1"], digests=["other"])
    assert conflict["status_code"] is None
    assert await conn.fetchval("SELECT count(*) FROM holds WHERE event_id = $1", event_id) == 2
    await audit_clean(conn)


async def test_limits_refuse_one_element_and_not_the_batch(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=50, stripes=1, max_per_account=3,
                            max_tickets_per_account=10)
    a, b, c = await _accounts(conn, 3)
    assert (await _batch(conn, event_id, [a], [3]))[0]["status_code"] == 201
    rows = await _batch(conn, event_id, [a, b, c], [1, 2, 4])
    assert [r["status_code"] for r in rows] == [409, 201, 409]  # c: 4 above the tier's 3
    assert rows[0]["body"] == {"code": "ticket_limit_exceeded", "limit": 3, "owned": 3,
                               "requested": 1, "tier_id": 1}


async def test_the_event_limit_counts_seats_and_places(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=50, stripes=1, max_tickets_per_account=4)
    (a,) = await _accounts(conn, 1)
    assert (await _batch(conn, event_id, [a], [3]))[0]["status_code"] == 201
    (row,) = await _batch(conn, event_id, [a], [2])
    assert (row["status_code"], row["body"]["code"], row["body"]["owned"]) \
        == (409, "ticket_limit_exceeded", 3)


# --- the batcher, over HTTP's path (create_batched_hold) ---------------------------------------


@contextlib.asynccontextmanager
async def _stripes_locked(db_url: str, event_id: int) -> AsyncIterator[Any]:
    """The event's stripes locked by another transaction; the caller rolls it back
    (the yielded transaction) to let the waiting batch go on."""
    locker = await asyncpg.connect(db_url)
    try:
        tx = locker.transaction()
        await tx.start()
        await locker.execute("SELECT * FROM ga_buckets WHERE event_id = $1 FOR UPDATE", event_id)
        yield tx
    finally:
        await locker.close()


def _alone(db: Database, batcher: GABatcher, event_id: int, account: uuid.UUID,
           quantity: int = 1) -> asyncio.Task[Any]:
    request = GARequest(1, quantity)
    return asyncio.create_task(create_batched_hold(db, batcher, Metrics(), event_id, account,
                                              uuid.uuid4().hex, _digest(event_id, request),
                                              request))


async def _race(go: asyncio.Event, dbs: list[Database],
                shoppers: list[Coroutine[Any, Any, T]]) -> list[T]:
    """The shoppers started, then let go at once (each waits for ``go``); their results.
    The processes' pools are closed after."""
    try:
        tasks = [asyncio.create_task(s) for s in shoppers]
        await asyncio.sleep(0.2)
        go.set()
        return list(await asyncio.gather(*tasks))
    finally:
        for db in dbs:
            await db.pool.close()


def _digest(event_id: int, request: GARequest) -> str:
    return request_digest("t", str(event_id), request)


async def _database(db_url: str, size: int = 4) -> Database:
    pool = await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=size))
    return Database(pool, acquire_timeout=5.0)


async def test_racing_batchers_sell_exactly_the_last_places(
        api: Api, conn: Any, db_url: str) -> None:
    """Four processes' batchers (each its pool), 400 shoppers at once, 30 places."""
    event_id = await _event(api, capacity=30, stripes=4)
    accounts = await _accounts(conn, 400)
    dbs = [await _database(db_url) for _ in range(4)]
    batchers = [GABatcher(db, max_batch=16, inflight=2) for db in dbs]
    metrics = Metrics()
    rng = random.Random(11)
    go = asyncio.Event()

    async def one(n: int, account: uuid.UUID) -> tuple[str, int]:
        request = GARequest(1, rng.choice((1, 1, 2, 3)))
        await go.wait()
        try:
            outcome = await create_batched_hold(dbs[n % 4], batchers[n % 4], metrics, event_id,
                                           account, uuid.uuid4().hex,
                                           _digest(event_id, request), request)
        except Problem as p:
            assert p.status == 409, p
            return p.code, 0
        return "held", int(outcome.body["ga"]["quantity"])

    results = await _race(go, dbs, [one(n, a) for n, a in enumerate(accounts)])
    assert {code for code, _ in results} <= {"held", "sold_out", "insufficient_quantity"}
    assert sum(q for _, q in results) == 30
    assert await _counts(conn, event_id) == (0, 30)
    assert await conn.fetchval("SELECT sum(quantity) FROM ga_hold_places "
                               "WHERE event_id = $1 AND status = 'HELD'", event_id) == 30
    # Requests did share transactions.
    assert sum(b.elements for b in batchers) > sum(b.batches for b in batchers)
    await audit_clean(conn)


async def test_a_failed_batch_runs_each_element_alone(
        api: Api, conn: Any, db_url: str) -> None:
    """A batch statement that fails with an error that is not an outage (here: one that
    divides by zero) leaves every request to the single path, which holds them all."""
    event_id = await _event(api, capacity=20, stripes=1)
    accounts = await _accounts(conn, 6)
    db = await _database(db_url)
    batcher = GABatcher(db, max_batch=8, inflight=1)
    batcher.statement = "SELECT 1 / 0 AS i, $1::bigint, $2::int, $3::uuid[], $4::text[], " \
                        "$5::text[], $6::int[]"
    request = GARequest(1, 2)
    try:
        outcomes = await asyncio.gather(*(
            create_batched_hold(db, batcher, Metrics(), event_id, a, uuid.uuid4().hex,
                           _digest(event_id, request), request) for a in accounts))
    finally:
        await db.pool.close()
    assert batcher.batches >= 1
    assert [o.status_code for o in outcomes] == [201] * 6  # every one alone, all held
    assert await _counts(conn, event_id) == (8, 12)
    await audit_clean(conn)


async def test_a_batch_cut_by_the_statement_timeout_writes_nothing_and_answers_503(
        api: Api, conn: Any, db_url: str) -> None:
    """The batch statement runs into the statement timeout (a stripe locked elsewhere):
    nothing of it is written, and each of its requests gets a clean 503."""
    event_id = await _event(api, capacity=20, stripes=1)
    accounts = await _accounts(conn, 3)
    pool = await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=4,
                                           db_request_timeout_ms=300))
    db = Database(pool, acquire_timeout=5.0)
    batcher = GABatcher(db, max_batch=8, inflight=1)
    try:
        async with _stripes_locked(db_url, event_id) as tx:
            results = await asyncio.gather(*(_alone(db, batcher, event_id, a)
                                             for a in accounts), return_exceptions=True)
            await tx.rollback()
    finally:
        await pool.close()
    # The batch's statement was cancelled by the server's timeout: every request of it
    # gets the 503 that one request alone would get, and nothing is written.
    assert all(isinstance(r, Problem) and r.status == 503 for r in results), results
    assert await _counts(conn, event_id) == (20, 0)
    assert await conn.fetchval("SELECT count(*) FROM holds WHERE event_id = $1", event_id) == 0
    await audit_clean(conn)


async def test_a_short_tier_answers_before_the_limits_as_alone(api: Api, conn: Any) -> None:
    """Sold out and at its limit: alone the answer is sold_out (the fail-fast read comes
    first), and so it is in a batch; a replay still replays."""
    event_id = await _event(api, capacity=4, stripes=1, max_tickets_per_account=4)
    a, b = await _accounts(conn, 2)
    (first,) = await _batch(conn, event_id, [a], [4], keys=["k"], digests=["d"])
    assert first["status_code"] == 201
    rows = await _batch(conn, event_id, [a, b, a], [1, 2, 4], keys=["x", "y", "k"],
                        digests=["d", "d", "d"])
    assert [r["status_code"] for r in rows] == [409, 409, 201]
    assert rows[0]["body"] == {"code": "sold_out", "available": 0, "requested": 1}
    assert rows[1]["body"]["code"] == "sold_out"
    assert rows[2]["replayed"] and rows[2]["body"] == first["body"]


async def test_a_key_whose_record_expired_runs_alone(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=20, stripes=1)
    a, b = await _accounts(conn, 2)
    assert (await _batch(conn, event_id, [a], [1], keys=["old"]))[0]["status_code"] == 201
    await conn.execute("DELETE FROM idempotency_keys WHERE account_id = $1", a)  # retention
    rows = await _batch(conn, event_id, [a, b], [1, 1], keys=["old", "new"])
    # alone it gets its idempotency_conflict; the other one is not sunk with it
    assert [r["status_code"] for r in rows] == [None, 201]


async def test_the_event_limit_counts_seat_holds_too(api: Api, conn: Any) -> None:
    event_id = await _event(api, capacity=50, stripes=1, max_tickets_per_account=3)
    account = await api.account(conn)
    async with api.client(account) as c:
        r = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1]},
                         headers={"Idempotency-Key": uuid.uuid4().hex})
    assert r.status_code == 201, r.text
    (row,) = await _batch(conn, event_id, [account], [3])
    assert (row["status_code"], row["body"]["owned"], row["body"]["limit"]) == (409, 1, 3)
    (row,) = await _batch(conn, event_id, [account], [2])
    assert row["status_code"] == 201


async def test_a_request_gone_while_queued_makes_no_hold(
        api: Api, conn: Any, db_url: str) -> None:
    """The first batch waits for a stripe locked elsewhere; a second request queued
    behind it is cancelled (its client went away): it is never sent."""
    event_id = await _event(api, capacity=20, stripes=1)
    a, b = await _accounts(conn, 2)
    db = await _database(db_url)
    batcher = GABatcher(db, max_batch=8, inflight=1)
    try:
        async with _stripes_locked(db_url, event_id) as tx:
            first = _alone(db, batcher, event_id, a)
            await asyncio.sleep(0.2)  # in the database, waiting for the stripe
            second = _alone(db, batcher, event_id, b)
            await asyncio.sleep(0.05)
            second.cancel()
            await tx.rollback()
            assert (await first).status_code == 201
    finally:
        await db.pool.close()
    assert second.cancelled()
    assert await conn.fetchval("SELECT array_agg(account_id) FROM holds WHERE event_id = $1",
                               event_id) == [a]
    assert batcher.elements == 1
    await audit_clean(conn)


async def test_racing_batchers_keep_each_account_within_the_tier_limit(
        api: Api, conn: Any, db_url: str) -> None:
    """60 accounts each send 4 requests at once through 3 processes' batchers, on a tier
    that allows 3 places an account: nobody gets more, and the audit agrees."""
    event_id = await _event(api, capacity=1000, stripes=4, max_per_account=3,
                            max_tickets_per_account=10)
    accounts = await _accounts(conn, 60)
    dbs = [await _database(db_url) for _ in range(3)]
    batchers = [GABatcher(db, max_batch=16, inflight=2) for db in dbs]
    rng = random.Random(3)
    go = asyncio.Event()

    async def one(n: int, account: uuid.UUID) -> str:
        request = GARequest(1, rng.choice((1, 2)))
        await go.wait()
        try:
            await create_batched_hold(dbs[n % 3], batchers[n % 3], Metrics(), event_id, account,
                                 uuid.uuid4().hex, _digest(event_id, request), request)
        except Problem as p:
            assert (p.status, p.code) == (409, "ticket_limit_exceeded"), p
            return p.code
        return "held"

    results = await _race(go, dbs, [one(n, a) for n, a in
                                    enumerate(a for a in accounts for _ in range(4))])
    assert "ticket_limit_exceeded" in results and "held" in results
    most = await conn.fetchval("SELECT max(s) FROM (SELECT sum(seat_count) AS s FROM holds "
                               "WHERE event_id = $1 GROUP BY account_id) t", event_id)
    assert most <= 3
    await audit_clean(conn)


def _outcomes(metrics: Metrics) -> dict[str, float]:
    return {s.labels["code"]: s.value for m in metrics.hold_outcomes.collect()
            for s in m.samples if s.name.endswith("_total")}


async def test_each_request_is_counted_once_whichever_path_answered_it(
        api: Api, conn: Any, db_url: str) -> None:
    """onsale_hold_outcomes_total and the latency histogram see every request exactly
    once: answered by its batch, sent to the spread stage, or run alone."""
    event_id = await _event(api, capacity=6, stripes=2, max_tickets_per_account=10)
    a, b, c, d = await _accounts(conn, 4)
    db = await _database(db_url)
    batcher = GABatcher(db, max_batch=8, inflight=1)
    metrics = Metrics()

    async def hold(account: uuid.UUID, quantity: int, key: str | None = None) -> str:
        request = GARequest(1, quantity)
        try:
            await create_batched_hold(db, batcher, metrics, event_id, account,
                                 key or uuid.uuid4().hex, _digest(event_id, request), request)
        except Problem as p:
            return p.code
        return "held"

    try:
        assert await hold(a, 2, key="k") == "held"  # by its batch
        assert await hold(a, 2, key="k") == "held"  # replayed by its batch
        assert await hold(b, 7) == "invalid_quantity"  # alone (above max_per_hold 6)
        # 4 of the 4 left, but no stripe has 4 (3 and 1): the spread stage, alone
        assert await hold(c, 4) == "held"
        assert await hold(d, 6) == "sold_out"  # fail fast, in the batch
    finally:
        await db.pool.close()
    counted = _outcomes(metrics)
    assert counted == {"created": 2, "replayed": 1, "invalid_quantity": 1, "sold_out": 1}
    alone = {s.labels["reason"]: s.value for m in metrics.ga_batch_alone.collect()
             for s in m.samples if s.name.endswith("_total")}
    assert alone == {"alone": 1, "spread": 1}
    assert sum(s.value for m in metrics.hold_latency.collect() for s in m.samples
               if s.name.endswith("_count")) == 5
