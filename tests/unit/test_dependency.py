"""kernel.dependency: the async glue around the breaker (no servers: calls are coroutines
that answer, fail or hang; the breaker's clock is driven by hand)."""

from __future__ import annotations

import asyncio
import logging

import pytest
import redis.exceptions

from onsale.kernel.breaker import Breaker, State
from onsale.kernel.dependency import Dependency, DependencyUnavailable, RedisUnavailable, is_outage
from onsale.kernel.problems import Problem


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def dependency(clock: Clock) -> Dependency:
    return Dependency("Valkey", timeout=0.01, error=RedisUnavailable,
                      breaker=Breaker(backoff=0.5, max_backoff=2.0, clock=clock))


async def hang() -> None:
    await asyncio.sleep(10)


async def answer() -> str:
    return "ok"


async def refuse() -> None:
    raise redis.exceptions.ConnectionError("Connection refused")


async def error_reply() -> None:
    raise redis.exceptions.ResponseError("NOSCRIPT")


async def test_a_hung_call_ends_at_its_bound_and_two_open_the_breaker(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="onsale.dependency")
    clock = Clock()
    dep = dependency(clock)
    for _ in range(2):
        with pytest.raises(RedisUnavailable) as failed:
            await dep.run(hang)
        assert failed.value.detail == "no answer in time"
    assert dep.breaker.state is State.OPEN
    with pytest.raises(RedisUnavailable):  # at once: the call is not even made
        await dep.run(answer)
    clock.now += 0.5
    assert await dep.run(answer) == "ok"  # the probe
    assert dep.breaker.state is State.CLOSED
    lines = [r.getMessage() for r in caplog.records if r.name == "onsale.dependency"]
    assert [line.split(" ", 2)[1:2] for line in lines] == [["went"], ["came"]]
    assert "Valkey went away (no answer in time)" in lines[0]
    assert lines[1] == "Valkey came back after 0.5 s"


async def test_what_counts_as_a_failure() -> None:
    clock = Clock()
    dep = dependency(clock)
    with pytest.raises(redis.exceptions.ResponseError):
        await dep.run(error_reply)  # an answer: passed through, not a failure
    with pytest.raises(RedisUnavailable):
        await dep.run(refuse)
    with pytest.raises(redis.exceptions.ResponseError):
        await dep.run(error_reply)  # resets the count
    with pytest.raises(RedisUnavailable):
        await dep.run(refuse)
    assert dep.breaker.state is State.CLOSED
    with pytest.raises(RedisUnavailable):
        await dep.run(refuse)
    assert dep.breaker.state is State.OPEN


async def test_waiting_for_a_busy_pool_is_not_a_failure() -> None:
    clock = Clock()
    dep = Dependency("Valkey", timeout=1.0, breaker=Breaker(clock=clock), slots=1,
                     queue_wait=0.01, error=RedisUnavailable)
    held = asyncio.Event()

    async def long_answer() -> str:
        held.set()
        await asyncio.sleep(0.1)
        return "slow"

    first = asyncio.create_task(dep.run(long_answer))
    await held.wait()
    for _ in range(3):
        with pytest.raises(RedisUnavailable) as busy:
            await dep.run(answer)
        assert busy.value.detail == "every connection is busy"
    assert dep.breaker.state is State.CLOSED  # this process was busy, Valkey was not
    assert await first == "slow"
    assert await dep.run(answer) == "ok"  # the slot came back


async def test_a_cancelled_probe_lets_the_next_call_probe() -> None:
    clock = Clock()
    dep = dependency(clock)
    for _ in range(2):
        with pytest.raises(RedisUnavailable):
            await dep.run(hang)
    clock.now += 0.5
    dep.timeout = None
    probe = asyncio.create_task(dep.run(hang))
    await asyncio.sleep(0)
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    assert await dep.run(answer) == "ok"


def test_redis_unavailable_is_a_redis_connection_error_and_an_outage() -> None:
    exc = RedisUnavailable("Valkey", "no answer in time")
    assert isinstance(exc, redis.exceptions.ConnectionError)
    assert isinstance(exc, DependencyUnavailable)
    assert is_outage(exc) and is_outage(Problem(503, "queue_unavailable"))
    assert not is_outage(Problem(404, "event_not_found"))
    assert not is_outage(ValueError("a bug"))
