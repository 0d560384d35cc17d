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
from onsale.kernel.problems import Problem

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
    while db.sent == 0:
        await asyncio.sleep(0)
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
    while db.sent == 0:
        await asyncio.sleep(0)
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
    assert rows == [None, None]  # each then runs alone (create_ga_hold)
    assert metrics.registry.get_sample_value(
        "onsale_ga_batch_failures_total", {"sqlstate": label}) == 1
