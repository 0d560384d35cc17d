"""core.password_pool: at most workers + queue hashing jobs; past that a
request is refused at once (503 sign_in_busy), never queued without end.
Jobs are held on a threading.Event, so nothing here depends on timing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from onsale.core.password_pool import PasswordPool
from onsale.kernel.problems import Problem, problem_handler


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave a worker blocked


def blocked(gate: threading.Event, value: str) -> str:
    if not gate.wait(30):
        raise RuntimeError("the test never released the job")
    return value


async def wait_for(predicate: object, what: str) -> None:
    for _ in range(3000):
        if callable(predicate) and predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"never: {what}")


async def test_a_full_pool_refuses_at_once_and_frees_its_slots(gate: threading.Event) -> None:
    pool = PasswordPool(workers=2, queue=1)
    try:
        jobs = [asyncio.ensure_future(pool.run(blocked, gate, f"j{i}")) for i in range(3)]
        await wait_for(lambda: pool.pending == 3, "three jobs admitted")
        with pytest.raises(Problem) as info:
            await pool.run(blocked, gate, "one too many")
        assert (info.value.status, info.value.code) == (503, "sign_in_busy")
        response = await problem_handler(None, info.value)  # type: ignore[arg-type]
        assert response.headers["retry-after"] == "1"
        gate.set()
        assert await asyncio.gather(*jobs) == ["j0", "j1", "j2"]
        await wait_for(lambda: pool.pending == 0, "slots released")
        assert await pool.run(str.upper, "again") == "AGAIN"
    finally:
        pool.close()


async def test_a_waiting_job_whose_caller_left_is_dropped(gate: threading.Event) -> None:
    pool = PasswordPool(workers=1, queue=1)
    ran: list[str] = []

    def record(value: str) -> str:
        ran.append(value)
        return value

    try:
        running = asyncio.ensure_future(pool.run(blocked, gate, "running"))
        await wait_for(lambda: pool.pending == 1, "the first job started")
        waiting = asyncio.ensure_future(pool.run(record, "waiting"))
        await wait_for(lambda: pool.pending == 2, "the second job queued")
        waiting.cancel()  # the client went away
        await wait_for(lambda: pool.pending == 1, "the queued job's slot freed")
        gate.set()
        assert await running == "running"
        await wait_for(lambda: pool.pending == 0, "all slots freed")
        assert ran == []  # it never ran
    finally:
        pool.close()


async def test_errors_in_a_job_reach_the_caller_and_free_the_slot() -> None:
    pool = PasswordPool(workers=1, queue=0)
    try:
        with pytest.raises(ZeroDivisionError):
            await pool.run(divmod, 1, 0)
        await wait_for(lambda: pool.pending == 0, "slot freed")
    finally:
        pool.close()


async def test_a_closed_pool_refuses() -> None:
    pool = PasswordPool(workers=1, queue=0)
    pool.close()
    with pytest.raises(Problem) as info:
        await pool.run(str.upper, "x")
    assert info.value.code == "sign_in_busy"
    assert pool.pending == 0


@pytest.mark.parametrize(("workers", "queue"), [(0, 1), (1, -1)])
def test_bad_sizes_are_refused(workers: int, queue: int) -> None:
    with pytest.raises(ValueError):
        PasswordPool(workers, queue)
