"""The GA quota plane's loop (core/ga_quota.py, run_quota_plane) with a fake pool: it
keeps running through failures, counts every failed pass, and logs only those that are
not a dependency outage (an outage is logged once, by its breaker). Issue 22, part 5:
kills slips no other test saw (scripts/mutants.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from onsale.core.ga_quota import run_quota_plane
from onsale.core.metrics import Metrics
from onsale.kernel.dependency import DependencyUnavailable


class _Conn:
    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        return []  # no GA tier to watch


class _Pool:
    def __init__(self, failures: list[BaseException]) -> None:
        self.failures = failures
        self.passes = 0

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[_Conn]:
        self.passes += 1
        if self.failures:
            raise self.failures.pop(0)
        yield _Conn()


async def test_the_loop_survives_failures_and_logs_only_what_is_not_an_outage(
        caplog: pytest.LogCaptureFixture) -> None:
    pool = _Pool([RuntimeError("boom"), DependencyUnavailable("postgres", "down")])
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    with caplog.at_level(logging.WARNING, logger="onsale.ga_quota"):
        task = asyncio.create_task(run_quota_plane(pool, metrics, 0.001))
        for _ in range(1000):
            if pool.passes >= 4:
                break
            await asyncio.sleep(0.001)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert pool.passes >= 4  # on after both failures
    assert registry.get_sample_value("onsale_ga_rebalance_errors_total", {"shard": "1"}) == 2
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 1 and "boom" in logged[0], logged
