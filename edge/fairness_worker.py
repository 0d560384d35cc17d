"""The fairness lab's worker process: one per edge process, started on the first run
(``spawn``: a fresh interpreter, nothing of the edge's threads or sockets), so a lab run
holds neither the event loop nor the GIL of the process serving the queue.

A worker that dies (killed, out of memory) breaks the run it had with ``WorkerDied``
(the route's ``503 lab_unavailable``), and the next run starts a new one. ``close`` (the
edge's lifespan) cancels queued runs and waits for the one in progress, if any.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")


class WorkerDied(RuntimeError):
    """The worker process ended before it answered."""


class LabWorker:
    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the worker process (both pickled: a module's function)."""
        pool = self._executor()
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
        except BrokenProcessPool:
            if self._pool is pool:
                self._pool = None
            pool.shutdown(wait=False)
            raise WorkerDied("the fairness lab's worker process ended before it "
                             "answered") from None

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)
