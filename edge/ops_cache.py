"""The operators' dashboard cache of one edge process: one computation per key and
TTL, shared by every open console; and the fairness lab's worker process, with one
simulation at a time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from onsale.edge.fairness_worker import LabWorker


class Cached:
    """One value per key, recomputed when older than its TTL; callers arriving
    while it is being computed wait for that computation (no stampede)."""

    def __init__(self) -> None:
        self._values: dict[Any, tuple[float, Any]] = {}
        self._locks: dict[Any, asyncio.Lock] = {}

    def age(self, key: Any) -> float | None:
        found = self._values.get(key)
        return None if found is None else time.monotonic() - found[0]

    async def get(self, key: Any, ttl: float, compute: Callable[[], Awaitable[Any]]) -> Any:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            found = self._values.get(key)
            if found is not None and time.monotonic() - found[0] < ttl:
                return found[1]
            value = await compute()
            self._values[key] = (time.monotonic(), value)
            return value


class OpsState:
    def __init__(self) -> None:
        self.cache = Cached()
        self.simulating = asyncio.Semaphore(1)
        self.lab = LabWorker()  # started on the first run; closed with the edge
