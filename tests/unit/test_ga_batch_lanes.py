"""The batcher's lanes over a stand-in database (no server): a lane is dropped once its
last batch is answered and nothing waits, a drain that is cancelled answers every
request still waiting, and a batch that fails with a database error is counted by its
SQLSTATE before each request runs alone. Issue 22, part 5: each kills a mutant of
core/ga_batch.py that the integration tests let through (scripts/mutants.py)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any, cast

import asyncpg
import pytest

from onsale.core.ga_batch import GABatcher
from onsale.core.metrics import Metrics
from onsale.kernel.problems import RESUMING, Problem

A, B = uuid.UUID(int=1), uuid.UUID(int=2)


class _Conn:
    def __init__(self, db: _Db) -> None:
        self.db = db

    async def fetch(self, _statement: str, *args: Any) -> list[dict[str, Any]]:
        self.db.sent += 1
        await self.db.gate.wait()
        if self.db.error is not None:
            raise self.db.error
        accounts = args[2]
        return [{"i": n, "status_code": 201, "body": {}} for n in range(1, len(accounts) + 1)]


class _Db:
    """Answers every batch with a created hold each, once ``gate`` is set; or raises
    ``error``."""

    acquire_timeout = 1.0

    def __init__(self, error: BaseException | None = None) -> None:
        self.gate = asyncio.Event()
        self.error = error
        self.sent = 0

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[_Conn]:
        yield _Conn(self)


async def _until(ready: Any) -> None:
    """Let the event loop run until ``ready()`` (a stand-in's step has happened)."""
    for _ in range(1000):
        if ready():
            return
        await asyncio.sleep(0)
    raise AssertionError("the step never happened")


def _batcher(db: _Db, metrics: Metrics | None = None, **options: Any) -> GABatcher:
    return GABatcher(cast(Any, db), metrics, **options)


async def test_a_lane_is_dropped_once_its_batches_are_answered() -> None:
    db = _Db()
    db.gate.set()
    batcher = _batcher(db, max_batch=4)
    rows = await asyncio.gather(batcher.hold(1, 1, A, "k1", "d", 1),
                                batcher.hold(1, 1, B, "k2", "d", 1))
    assert [r["status_code"] for r in rows if r is not None] == [201, 201]
    for _ in range(10):  # the drain's last step runs after the answers
        if not batcher._tasks:
            break
        await asyncio.sleep(0)
    assert batcher._lanes == {}


async def test_a_lane_with_a_batch_still_running_is_kept() -> None:
    db = _Db()
    batcher = _batcher(db, max_batch=1, inflight=1)
    first = asyncio.ensure_future(batcher.hold(1, 1, A, "k1", "d", 1))
    await _until(lambda: db.sent > 0)
    assert (1, 1) in batcher._lanes  # running: another request joins this lane
    second = asyncio.ensure_future(batcher.hold(1, 1, B, "k2", "d", 1))
    await asyncio.sleep(0)
    assert db.sent == 1  # inflight 1: it waits its turn in the same lane
    db.gate.set()
    assert (await first)["status_code"] == 201 and (await second)["status_code"] == 201
    assert db.sent == 2


async def test_a_cancelled_drain_answers_every_request_still_waiting() -> None:
    db = _Db()  # the first batch never comes back
    batcher = _batcher(db, max_batch=1, inflight=1)
    first = asyncio.ensure_future(batcher.hold(1, 1, A, "k1", "d", 1))
    second = asyncio.ensure_future(batcher.hold(1, 1, B, "k2", "d", 1))
    await _until(lambda: db.sent > 0)
    for task in list(batcher._tasks):  # shutting down
        task.cancel()
    done, _ = await asyncio.wait([first, second], timeout=30)  # a hang guard, not a bound
    assert len(done) == 2
    for request in (first, second):
        problem = request.exception()
        assert isinstance(problem, Problem)
        assert (problem.status, problem.code) == (503, "inventory_unavailable")


@pytest.mark.parametrize(("error", "label"), [
    (asyncpg.exceptions.SerializationError("conflict"), "40001"),
    (asyncpg.PostgresError("no state"), ""),
])
async def test_a_failed_batch_is_counted_by_its_sqlstate_and_each_runs_alone(
        error: BaseException, label: str) -> None:
    db = _Db(error)
    db.gate.set()
    metrics = Metrics()
    batcher = _batcher(db, metrics, max_batch=4)
    rows = await asyncio.gather(batcher.hold(1, 1, A, "k1", "d", 1),
                                batcher.hold(1, 1, B, "k2", "d", 1))
    assert rows == [None, None]  # each then runs alone (create_batched_hold)
    assert metrics.registry.get_sample_value(
        "onsale_ga_batch_failures_total", {"sqlstate": label}) == 1


async def test_a_batch_a_resuming_shard_refuses_answers_each_503_resuming() -> None:
    """OS503: the shard is resuming after a failover (core/failover.py). Every element
    gets the 503 the one-hold path gives (``resuming``: a client retries later), and none
    runs alone against a shard that refuses them all."""
    refusal = asyncpg.PostgresError("resuming")
    refusal.sqlstate = "OS503"
    db = _Db(refusal)
    db.gate.set()
    metrics = Metrics()
    batcher = _batcher(db, metrics, max_batch=4)
    answers = await asyncio.gather(batcher.hold(1, 1, A, "k1", "d", 1),
                                   batcher.hold(1, 1, B, "k2", "d", 1),
                                   return_exceptions=True)
    for problem in answers:
        assert isinstance(problem, Problem)
        assert (problem.status, problem.code, problem.detail, problem.extra) == \
            (503, "inventory_unavailable", RESUMING, {"resuming": True})
    assert db.sent == 1  # one batch, and nothing alone
    assert metrics.registry.get_sample_value(
        "onsale_ga_batch_failures_total", {"sqlstate": "OS503"}) is None  # not a failure


async def test_a_lane_sends_to_the_database_its_first_request_named() -> None:
    """The event's shard (core/holds.py passes it); the batcher's own database only when
    none is named."""
    default, shard = _Db(), _Db()
    default.gate.set()
    shard.gate.set()
    batcher = _batcher(default, max_batch=4)
    await batcher.hold(1, 1, A, "k1", "d", 1, cast(Any, shard))
    assert (shard.sent, default.sent) == (1, 0)
    await batcher.hold(2, 1, A, "k2", "d", 1)
    assert (shard.sent, default.sent) == (1, 1)


class _Turns(_Db):
    """Each batch waits for a turn of its own; counts the batches out at once."""

    def __init__(self) -> None:
        super().__init__()
        self.turns: asyncio.Queue[None] = asyncio.Queue()
        self.out = self.most = 0

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        self.out += 1
        self.most = max(self.most, self.out)
        try:
            await self.turns.get()
            self.gate.set()
            yield _Conn(self)
        finally:
            self.out -= 1


async def test_a_lane_outlives_a_drain_while_another_of_its_batches_runs() -> None:
    """inflight 2: when one drain ends with nothing waiting while the other's batch is
    still out, the lane stays, so later requests queue behind it and never a third
    batch goes out at once."""
    db = _Turns()
    batcher = _batcher(db, max_batch=1, inflight=2)
    accounts = [uuid.UUID(int=n) for n in range(1, 6)]
    first = [asyncio.ensure_future(batcher.hold(1, 1, a, f"k{n}", "d", 1))
             for n, a in enumerate(accounts[:2])]
    await _until(lambda: db.out == 2)
    db.turns.put_nowait(None)  # one batch answers; its drain finds nothing waiting
    done, _ = await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED, timeout=30)
    assert len(done) == 1
    for _ in range(10):
        await asyncio.sleep(0)
    later = [asyncio.ensure_future(batcher.hold(1, 1, a, f"l{n}", "d", 1))
             for n, a in enumerate(accounts[2:])]
    for _ in range(20):
        await asyncio.sleep(0)
    assert db.most == 2  # never more than inflight batches out at once
    for _ in range(4):
        db.turns.put_nowait(None)
    rows = await asyncio.wait_for(asyncio.gather(*first, *later), 30)  # a hang guard
    assert all(r is not None and r["status_code"] == 201 for r in rows)
    assert db.most == 2
