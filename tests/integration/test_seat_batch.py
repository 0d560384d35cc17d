"""Batched seat holds (core/seat_batch.py, onsale_hold_batch) against a real PostgreSQL:
each element gets the answer onsale_hold would give it alone, in arrival order, what a
batch cannot settle runs alone, and racing batches from several processes never hold a
seat twice."""

from __future__ import annotations

import asyncio
import itertools
import random
import uuid
from typing import Any

import asyncpg
import pytest

from onsale.core.audit import format_report, run_audit
from onsale.core.hold_rules import SeatsRequest, request_digest
from onsale.core.hold_store import HoldOutcome, create_batched_hold, create_hold
from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.core.seat_batch import SeatBatcher
from onsale.core.sweeper import sweep_once
from onsale.kernel.db import Database, create_pool
from onsale.kernel.problems import Problem
from tests.conftest import Api, audit_clean, make_settings
from tests.integration.test_ga_concurrency import _checkout, _connections
from tests.integration.test_hold_concurrency import _accounts

BATCH = ("SELECT i, status_code, body, lock_wait_ms, replayed FROM onsale_hold_batch("
         "$1, $2::uuid[], $3::text[], $4::text[], $5::integer[], $6::integer[]) ORDER BY i")


async def _batch(conn: Any, event_id: int, accounts: list[uuid.UUID],
                 seats: list[list[int]], keys: list[str] | None = None,
                 digests: list[str] | None = None) -> list[dict[str, Any]]:
    keys = keys or [uuid.uuid4().hex for _ in accounts]
    digests = digests or [_digest(event_id, s) for s in seats]
    flat = [s for one in seats for s in one]
    elements = [n for n, one in enumerate(seats, start=1) for _ in one]
    rows = await conn.fetch(BATCH, event_id, accounts, keys, digests, flat, elements)
    return [dict(r) for r in rows]


def _digest(event_id: int, seats: list[int] | tuple[int, ...]) -> str:
    return request_digest("t", str(event_id), SeatsRequest(tuple(sorted(set(seats)))))


def _answer(result: HoldOutcome | Problem) -> tuple[Any, ...]:
    """What a shopper sees, without what differs between two events by construction."""
    if isinstance(result, Problem):
        return ("problem", result.status, result.code, sorted(result.extra.items()))
    body = {k: v for k, v in result.body.items() if k not in ("hold_id", "expires_at",
                                                               "event_id")}
    return ("hold", result.status_code, result.replayed, body)


async def _alone(conn: Any, event_id: int, account: uuid.UUID, key: str,
                 seats: list[int]) -> HoldOutcome | Problem:
    request = SeatsRequest(tuple(sorted(set(seats))))
    try:
        return await create_hold(conn, Metrics(), event_id, account, key,
                                 _digest(event_id, seats), request)
    except Problem as problem:
        return problem


async def _database(db_url: str, size: int = 4) -> Database:
    pool = await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=size))
    return Database(pool, acquire_timeout=5.0)


async def test_a_batch_holds_in_arrival_order_and_each_loser_is_told_its_seats(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20)
    a, b, c, d = await _accounts(conn, 4)
    rows = await _batch(conn, event_id, [a, b, c, d], [[3, 1], [2, 3], [4], [1, 5]])
    assert [r["status_code"] for r in rows] == [201, 409, 201, 409]
    assert [s["seat_id"] for s in rows[0]["body"]["seats"]] == [1, 3]
    assert rows[1]["body"] == {"code": "seats_unavailable", "unavailable_seat_ids": [3]}
    assert rows[3]["body"] == {"code": "seats_unavailable", "unavailable_seat_ids": [1]}
    held = await conn.fetch("SELECT seat_id, hold_id::text FROM seat_inventory "
                            "WHERE event_id = $1 AND status = 'HELD' ORDER BY seat_id", event_id)
    assert [(r["seat_id"], r["hold_id"]) for r in held] == [
        (1, rows[0]["body"]["hold_id"]), (3, rows[0]["body"]["hold_id"]),
        (4, rows[2]["body"]["hold_id"])]
    assert await conn.fetchval("SELECT count(*) FROM outbox WHERE event_type = 'hold.created' "
                               "AND event_id = $1", event_id) == 2
    assert await conn.fetchval("SELECT count(*) FROM idempotency_keys") == 2  # winners only
    await audit_clean(conn)


async def test_what_a_batch_cannot_settle_is_left_to_the_single_path(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20, max_seats_per_hold=2)
    a, b, c, d = await _accounts(conn, 4)
    # the second element of an account, too many seats, an unknown seat, a repeated one
    rows = await _batch(conn, event_id, [a, a, b, c, d], [[1], [2], [3, 4, 5], [999], [6, 6]])
    assert [r["status_code"] for r in rows] == [201, None, None, None, None]
    # a sale not open yet, and no such event: every element alone
    later = await api.create_event(seats=5, onsale_at="2099-01-01T00:00:00Z")
    assert {r["status_code"] for r in await _batch(conn, later, [a, b], [[1], [2]])} == {None}
    assert {r["status_code"] for r in await _batch(conn, 10**9, [a], [[1]])} == {None}
    assert await conn.fetchval("SELECT count(*) FROM holds") == 1
    await audit_clean(conn)


async def test_replays_and_key_conflicts_in_a_batch(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20)
    a, b = await _accounts(conn, 2)
    (first,) = await _batch(conn, event_id, [a], [[1, 2]], keys=["k1"])
    assert first["status_code"] == 201
    # the same key and request, on both sides of the fail-fast read: the stored answer
    rows = await _batch(conn, event_id, [a, b], [[1, 2], [5]], keys=["k1", "k2"])
    assert (rows[0]["status_code"], rows[0]["replayed"]) == (201, True)
    assert rows[0]["body"] == first["body"]
    assert rows[1]["status_code"] == 201
    # the same key, another request: alone (it raises idempotency_conflict there)
    (conflict,) = await _batch(conn, event_id, [a], [[7]], keys=["k1"])
    assert conflict["status_code"] is None
    (conflict,) = await _batch(conn, event_id, [a], [[1]], keys=["k1"])  # seat taken
    assert conflict["status_code"] is None
    assert await conn.fetchval("SELECT count(*) FROM holds WHERE event_id = $1", event_id) == 2
    await audit_clean(conn)


async def test_a_key_whose_record_expired_runs_alone(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20)
    a, b = await _accounts(conn, 2)
    assert (await _batch(conn, event_id, [a], [[1]], keys=["old"]))[0]["status_code"] == 201
    await conn.execute("DELETE FROM idempotency_keys WHERE account_id = $1", a)  # retention
    rows = await _batch(conn, event_id, [a, b], [[2], [3]], keys=["old", "new"])
    assert [r["status_code"] for r in rows] == [None, 201]  # the other is not sunk with it


async def test_the_limit_yields_to_a_seat_an_earlier_element_won(api: Api, conn: Any) -> None:
    """Alone, after the element before it, an account at its limit asking for a seat
    that element won fails fast on the seat; asking for free seats, on the limit."""
    event_id = await api.create_event(seats=20, max_tickets_per_account=2)
    a, b, c = await _accounts(conn, 3)
    assert (await _batch(conn, event_id, [b], [[10, 11]]))[0]["status_code"] == 201
    assert (await _batch(conn, event_id, [c], [[12, 13]]))[0]["status_code"] == 201
    rows = await _batch(conn, event_id, [a, b, c], [[1], [1], [10, 14]])
    assert rows[0]["status_code"] == 201
    assert rows[1]["body"] == {"code": "seats_unavailable", "unavailable_seat_ids": [1]}
    # seat 10 is b's, taken in committed state: c fails fast on it, before its limit
    assert rows[2]["body"] == {"code": "seats_unavailable", "unavailable_seat_ids": [10]}
    (row,) = await _batch(conn, event_id, [b], [[15]])
    assert row["body"] == {"code": "ticket_limit_exceeded", "limit": 2, "owned": 2,
                           "requested": 1}
    await audit_clean(conn)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_every_answer_is_the_one_the_single_hold_gives(
        api: Api, conn: Any, seed: int) -> None:
    """Random batches on a small hot block (overlaps, replays, key conflicts, limits,
    expired holds, unknown and repeated seats, an account twice) on one event; the same
    requests one by one through onsale_hold on a twin event, in the order the batcher
    answers them (the batch's, then what it left alone). Every answer is the same."""
    rng = random.Random(seed)
    one, twin = [await api.create_event(seats=30, max_tickets_per_account=3,
                                        max_seats_per_hold=3, hold_ttl_seconds=60)
                 for _ in range(2)]
    accounts = await _accounts(conn, 10)
    keys: dict[int, list[str]] = {one: [], twin: []}  # per event: keys are per account
    for _round in range(6):
        # one account's holds on both events made to expire: claims take them over
        await conn.execute("UPDATE holds SET expires_at = now() - interval '1 s' "
                           "WHERE status = 'HELD' AND account_id = $1",
                           accounts[_round % len(accounts)])
        await conn.execute("UPDATE seat_inventory si SET hold_expires_at = h.expires_at "
                           "FROM holds h WHERE si.hold_id = h.hold_id")
        size = rng.randint(2, 12)
        who = [rng.choice(accounts) for _ in range(size)]
        asks = [[rng.choice((1, 2, 3, 4, 5, 6, 31)) for _ in range(rng.randint(1, 4))]
                for _ in range(size)]
        picks = []  # (new key?, reuse index)
        for _ in range(size):
            picks.append(rng.random() < 0.25 and len(keys[one]) > 0)
        answers: dict[int, list[tuple[Any, ...]]] = {}
        for event_id in (one, twin):
            names = [rng_key(keys[event_id], n, reuse) for n, reuse in enumerate(picks)]
            if event_id == one:
                rows = await _batch(conn, event_id, who, asks, keys=names)
                order = [n for n, r in enumerate(rows) if r["status_code"] is not None] \
                    + [n for n, r in enumerate(rows) if r["status_code"] is None]
                got = [_answer(_row_result(r)) if r["status_code"] is not None else ()
                       for r in rows]
                for n in order:
                    if not got[n]:
                        got[n] = _answer(await _alone(conn, event_id, who[n], names[n],
                                                      asks[n]))
                answers[event_id] = got
            else:
                alone: list[tuple[Any, ...]] = [()] * size
                for n in order:
                    alone[n] = _answer(await _alone(conn, event_id, who[n], names[n], asks[n]))
                answers[event_id] = alone
            keys[event_id].extend(names)
        assert answers[one] == answers[twin], (asks, who)
    await audit_clean(conn)


def rng_key(used: list[str], n: int, reuse: bool) -> str:
    """A key for the n-th element: an earlier one of this event (a replay or a
    conflict), else a new one. Deterministic in (used, n), so both events get the same
    shape."""
    if reuse and used:
        return used[(n * 7) % len(used)]
    return f"{uuid.uuid4().hex}"


def _row_result(row: dict[str, Any]) -> HoldOutcome | Problem:
    body = row["body"]
    if row["status_code"] >= 400:
        extra = dict(body)
        return Problem(int(row["status_code"]), str(extra.pop("code")), **extra)
    return HoldOutcome(int(row["status_code"]), body, bool(row["replayed"]))


# --- races through several processes' batchers ------------------------------------------


async def _hold(db: Database, batcher: SeatBatcher, metrics: Metrics, event_id: int,
                account: uuid.UUID, seats: list[int]) -> HoldOutcome | Problem:
    request = SeatsRequest(tuple(sorted(seats)))
    try:
        return await create_batched_hold(db, batcher, metrics, event_id, account,
                                         uuid.uuid4().hex, _digest(event_id, seats), request)
    except Problem as problem:
        return problem


async def test_forty_shoppers_race_for_one_seat_through_four_batchers(
        api: Api, conn: Any, db_url: str) -> None:
    event_id = await api.create_event(seats=10)
    accounts = await _accounts(conn, 40)
    dbs = [await _database(db_url) for _ in range(4)]
    batchers = [SeatBatcher(db, max_batch=16, inflight=2) for db in dbs]
    metrics = Metrics()
    go = asyncio.Event()

    async def one(n: int, account: uuid.UUID) -> HoldOutcome | Problem:
        await go.wait()
        return await _hold(dbs[n % 4], batchers[n % 4], metrics, event_id, account, [7])

    try:
        tasks = [asyncio.create_task(one(n, a)) for n, a in enumerate(accounts)]
        await asyncio.sleep(0.2)
        go.set()
        results = await asyncio.gather(*tasks)
    finally:
        for db in dbs:
            await db.pool.close()
    won = [r for r in results if isinstance(r, HoldOutcome)]
    assert len(won) == 1
    lost = [r for r in results if isinstance(r, Problem)]
    assert {(p.status, p.code, tuple(p.extra["unavailable_seat_ids"])) for p in lost} \
        == {(409, "seats_unavailable", (7,))}
    assert await conn.fetchval("SELECT hold_id::text FROM seat_inventory WHERE event_id = $1 "
                               "AND seat_id = 7", event_id) == won[0].body["hold_id"]
    assert await conn.fetchval("SELECT count(*) FROM holds") == 1
    assert sum(b.elements for b in batchers) > sum(b.batches for b in batchers)  # shared
    await audit_clean(conn)


async def test_overlapping_sets_race_through_three_batchers(
        api: Api, conn: Any, db_url: str) -> None:
    """240 shoppers, each three of eight seats in any order, through three processes'
    batchers, three rounds: all three or none, never a seat twice, no deadlock."""
    event_id = await api.create_event(seats=40)
    triples = list(itertools.combinations(range(1, 9), 3))
    rng = random.Random(7)
    accounts = await _accounts(conn, 240)
    dbs = [await _database(db_url) for _ in range(3)]
    batchers = [SeatBatcher(db, max_batch=32, inflight=2) for db in dbs]
    metrics = Metrics()
    try:
        for _ in range(3):
            asks = [list(rng.choice(triples)) for _ in accounts]
            for seats in asks:
                rng.shuffle(seats)
            results = await asyncio.gather(*(
                _hold(dbs[n % 3], batchers[n % 3], metrics, event_id, a, asks[n])
                for n, a in enumerate(accounts)))
            held: set[int] = set()
            for seats, result in zip(asks, results, strict=True):
                if isinstance(result, Problem):
                    assert (result.status, result.code) == (409, "seats_unavailable"), result
                    assert set(result.extra["unavailable_seat_ids"]) <= set(seats)
                    continue
                got = [s["seat_id"] for s in result.body["seats"]]
                assert sorted(got) == sorted(seats)
                assert held.isdisjoint(got), "a seat was held twice"
                held.update(got)
            assert held
            db_held = await conn.fetch("SELECT seat_id FROM seat_inventory "
                                       "WHERE event_id = $1 AND status = 'HELD'", event_id)
            assert {r["seat_id"] for r in db_held} == held
            await audit_clean(conn)
            await conn.execute("SELECT onsale_release(hold_id, account_id) FROM holds "
                               "WHERE status = 'HELD'")
    finally:
        for db in dbs:
            await db.pool.close()
    assert metrics.deadlock_retries._value.get() == 0
    assert sum(b.elements for b in batchers) > sum(b.batches for b in batchers)


async def test_a_failed_batch_runs_each_element_alone(
        api: Api, conn: Any, db_url: str) -> None:
    event_id = await api.create_event(seats=20)
    accounts = await _accounts(conn, 6)
    db = await _database(db_url)
    batcher = SeatBatcher(db, max_batch=8, inflight=1)
    batcher.statement = ("SELECT 1 / 0 AS i, $1::bigint, $2::uuid[], $3::text[], $4::text[], "
                         "$5::int[], $6::int[]")
    metrics = Metrics()
    try:
        results = await asyncio.gather(*(_hold(db, batcher, metrics, event_id, a, [n + 1])
                                         for n, a in enumerate(accounts)))
    finally:
        await db.pool.close()
    assert batcher.batches >= 1
    assert [r.status_code for r in results if isinstance(r, HoldOutcome)] == [201] * 6
    assert metrics.seat_batch_alone._value.get() == 6
    await audit_clean(conn)


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batched"])
async def test_holds_expiries_releases_and_checkouts_interleave_under_two_auditors(
        api: Api, conn: Any, db_url: str, batched: bool) -> None:
    """Two and a half seconds of everything at once on a hot block of twelve seats,
    across the 1 s expiry boundary: holds (through two processes' batchers, or alone),
    releases, checkouts, a sweeper, and two auditors checking every invariant in their
    own snapshots meanwhile."""
    event_id = await api.create_event(seats=12, hold_ttl_seconds=1,
                                      max_tickets_per_account=100)
    accounts = await _accounts(conn, 24)
    conns = await _connections(db_url, 28)
    metrics = Metrics()
    deadline = asyncio.get_running_loop().time() + 2.5
    violations: list[str] = []
    counts = {"held": 0, "released": 0, "sold": 0, "swept": 0, "audits": 0}
    dbs = [await _database(db_url, 3) for _ in range(2 if batched else 0)]
    batchers = [SeatBatcher(db, max_batch=16, inflight=2) for db in dbs]

    def running() -> bool:
        return asyncio.get_running_loop().time() < deadline

    async def hold(c: Any, account: uuid.UUID, seats: list[int]) -> HoldOutcome | Problem:
        if batched:
            n = hash(account) % 2
            return await _hold(dbs[n], batchers[n], metrics, event_id, account, seats)
        return await _alone(c, event_id, account, uuid.uuid4().hex, seats)

    async def shopper(c: Any, account: uuid.UUID, rng: random.Random) -> None:
        q = queries("holds")
        while running():
            seats = rng.sample(range(1, 13), rng.randint(1, 3))
            outcome = await hold(c, account, seats)
            if isinstance(outcome, Problem):
                assert (outcome.status, outcome.code) == (409, "seats_unavailable"), outcome
                await asyncio.sleep(0.01)
                continue
            counts["held"] += 1
            hold_id = uuid.UUID(outcome.body["hold_id"])
            # Each of the three ends in turn, so every run has all three however few
            # holds a loaded machine gets through (chosen at random, 14 holds once
            # made no release: 0.7 ** 14); their timing stays random.
            turn = counts["held"] % 3
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

    async def auditor(c: Any) -> None:
        while running():
            results = await run_audit(c)
            counts["audits"] += 1
            if any(results.values()):
                violations.append(format_report(results))
            await asyncio.sleep(0.02)

    rng = random.Random(5)
    try:
        await asyncio.gather(
            *(shopper(c, accounts[i], random.Random(rng.random()))
              for i, c in enumerate(conns[:24])),
            sweeper(conns[24]), auditor(conns[25]), auditor(conns[26]))
    finally:
        await asyncio.gather(*(c.close() for c in conns))
        for db in dbs:
            await db.pool.close()
    assert not violations, violations[0]
    assert counts["audits"] >= 4 and counts["held"] > 10 and counts["released"] > 0
    assert counts["sold"] > 0
    if batched:
        assert sum(b.elements for b in batchers) > sum(b.batches for b in batchers)
    # Holds crossed their deadline: ended by the sweeper or taken over by a claim.
    assert await conn.fetchval("SELECT count(*) FROM holds WHERE event_id = $1 AND status = "
                               "'EXPIRED'", event_id) + await conn.fetchval(
        "SELECT count(*) FROM hold_releases WHERE event_id = $1 AND reason = 'reclaimed'",
        event_id) > 0
    await asyncio.sleep(1.1)  # every remaining hold past its deadline
    await sweep_once(conn, 1000)
    sold = await conn.fetchval("SELECT count(*) FROM seat_inventory WHERE event_id = $1 "
                               "AND status = 'SOLD'", event_id)
    assert sold == await conn.fetchval(
        "SELECT coalesce(sum(h.seat_count), 0) FROM holds h WHERE h.event_id = $1 "
        "AND h.status = 'CONFIRMED'", event_id)
    assert await conn.fetchval("SELECT count(*) FROM seat_inventory WHERE event_id = $1 "
                               "AND status = 'HELD'", event_id) == 0
    await audit_clean(conn)


async def test_a_batch_cut_by_the_statement_timeout_writes_nothing_and_answers_503(
        api: Api, conn: Any, db_url: str) -> None:
    """The batch waits for a seat row locked elsewhere past the statement timeout: each
    request gets the 503 it would get alone, nothing is written; a request queued behind
    it whose client went away is never sent."""
    event_id = await api.create_event(seats=20)
    a, b, c = await _accounts(conn, 3)
    pool = await create_pool(make_settings(db_url, db_pool_min=1, db_pool_max=4,
                                           db_request_timeout_ms=300))
    db = Database(pool, acquire_timeout=5.0)
    batcher = SeatBatcher(db, max_batch=8, inflight=1)
    locker = await asyncpg.connect(db_url)
    try:
        tx = locker.transaction()
        await tx.start()
        await locker.execute("SELECT * FROM seat_inventory WHERE event_id = $1 AND seat_id = 5 "
                             "FOR UPDATE", event_id)
        first = [asyncio.create_task(_hold(db, batcher, Metrics(), event_id, x, [5, 6]))
                 for x in (a, b)]
        await asyncio.sleep(0.1)  # in the database, waiting for seat 5
        gone = asyncio.create_task(_hold(db, batcher, Metrics(), event_id, c, [9]))
        await asyncio.sleep(0.05)
        gone.cancel()
        results = await asyncio.gather(*first)
        await tx.rollback()
    finally:
        await locker.close()
        await pool.close()
    assert all(isinstance(r, Problem) and r.status == 503 for r in results), results
    assert gone.cancelled()
    assert batcher.elements == 2
    assert await conn.fetchval("SELECT count(*) FROM holds WHERE event_id = $1", event_id) == 0
    await audit_clean(conn)


async def test_the_limit_counts_this_accounts_live_paying_and_sold_holds_only(
        api: Api, conn: Any) -> None:
    """The batch's ticket limit counts the account's holds in payment, sold, and held
    within their deadline: not an expired (two here, outnumbering the one in payment)
    or released one, not another account's."""
    event_id = await api.create_event(seats=30, max_tickets_per_account=10)
    a, b = await _accounts(conn, 2)
    made = [(await _batch(conn, event_id, [a], [[n]]))[0]["body"]["hold_id"]
            for n in (1, 2, 3, 4, 5, 8)]
    paying, sold, _live, expired, released, expired_too = (uuid.UUID(h) for h in made)
    for hold_id in (paying, sold):
        begun = await conn.fetchrow(
            "SELECT operation_id FROM onsale_checkout_begin($1, $2, $3, 'd', "
            "'pm_card_visa', 600, 0, 30)", hold_id, a, uuid.uuid4().hex)
        if hold_id == sold:
            await conn.fetchval(
                "SELECT onsale_payment_apply($1, 'AUTHORIZED', $2, NULL, NULL, 'test', 30)",
                begun["operation_id"], f"pi_{uuid.uuid4().hex[:12]}")
    await conn.execute("UPDATE holds SET expires_at = now() - interval '1 s' "
                       "WHERE hold_id = ANY($1)", [expired, expired_too])
    await conn.execute("UPDATE seat_inventory si SET hold_expires_at = h.expires_at "
                       "FROM holds h WHERE h.hold_id = si.hold_id AND h.hold_id = ANY($1)",
                       [expired, expired_too])
    await conn.execute("SELECT onsale_release($1, $2)", released, a)
    assert [r["status"] for r in await conn.fetch(
        "SELECT status FROM holds WHERE hold_id = ANY($1) ORDER BY seat_ids[1]", made)] == [
        "PAYMENT_PENDING", "CONFIRMED", "HELD", "HELD", "RELEASED", "HELD"]
    assert (await _batch(conn, event_id, [b], [[6, 7]]))[0]["status_code"] == 201  # b's own
    await conn.execute("UPDATE events SET max_tickets_per_account = 4 WHERE event_id = $1",
                       event_id)
    (first,) = await _batch(conn, event_id, [a], [[10]])  # owns 3: paying, sold, live
    assert first["status_code"] == 201, first
    (second,) = await _batch(conn, event_id, [a], [[11]])
    assert second["body"] == {"code": "ticket_limit_exceeded", "limit": 4, "owned": 4,
                              "requested": 1}
    await audit_clean(conn)


async def test_a_key_is_one_accounts_another_account_with_it_is_not_replayed(
        api: Api, conn: Any) -> None:
    """Two accounts sending the same key and the same request each get their own answer:
    on the fail-fast path (the seat is the first one's) and under the locks (the first
    one released it)."""
    event_id = await api.create_event(seats=30)
    a, b = await _accounts(conn, 2)
    (taken,) = await _batch(conn, event_id, [a], [[20]], keys=["shared"])
    (lost,) = await _batch(conn, event_id, [b], [[20]], keys=["shared"])
    assert (lost["status_code"], lost["replayed"]) == (409, False)
    assert lost["body"] == {"code": "seats_unavailable", "unavailable_seat_ids": [20]}
    (first,) = await _batch(conn, event_id, [a], [[22]], keys=["shared2"])
    await conn.execute("SELECT onsale_release($1, $2)", uuid.UUID(first["body"]["hold_id"]), a)
    (mine,) = await _batch(conn, event_id, [b], [[22]], keys=["shared2"])
    assert (mine["status_code"], mine["replayed"]) == (201, False)
    assert mine["body"]["hold_id"] != first["body"]["hold_id"]
    assert await conn.fetchval("SELECT account_id FROM holds WHERE hold_id = $1",
                               uuid.UUID(mine["body"]["hold_id"])) == b
    assert taken["status_code"] == 201
    await audit_clean(conn)
