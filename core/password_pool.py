"""A bounded pool for password hashing, so that a sign-in flood cannot starve
holds (docs/security.md#sign-in-and-sign-up-throttling).

argon2id is deliberately expensive (tens of milliseconds of CPU and 19 MiB
each). The pool runs at most ``workers`` of them at once in its own threads
(never the event loop's default executor, which other work shares) and lets
at most ``queue`` more wait; past that a request is refused at once with
``503 sign_in_busy`` and ``Retry-After`` rather than queueing without end.
A waiting job whose request task is cancelled is dropped before it runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from onsale.kernel.problems import Problem

T = TypeVar("T")


class PasswordPool:
    def __init__(self, workers: int, queue: int) -> None:
        if workers < 1 or queue < 0:
            raise ValueError("workers >= 1 and queue >= 0 are required")
        self.workers = workers
        self.limit = workers + queue  # running + waiting
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="onsale-password")
        self._lock = threading.Lock()
        self._pending = 0

    @property
    def pending(self) -> int:
        """Jobs running or waiting."""
        return self._pending

    def _release(self, _: Future[T]) -> None:
        with self._lock:
            self._pending -= 1

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` in the pool, or 503 ``sign_in_busy`` if it is full."""
        with self._lock:
            if self._pending >= self.limit:
                raise Problem(503, "sign_in_busy",
                              detail="Too many sign-ins are being checked; retry shortly.")
            self._pending += 1
        try:
            job = self._executor.submit(fn, *args)
        except RuntimeError:  # shut down
            with self._lock:
                self._pending -= 1
            raise Problem(503, "sign_in_busy", detail="The server is stopping.") from None
        job.add_done_callback(self._release)  # when it ran, or was cancelled before
        return await asyncio.wrap_future(job)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
