"""Concurrent calls for the same key share one run of the work: the layout read of a
cold venue, the build of a draw page (``core/venues.py``, ``edge/draw_pages.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SingleFlight(Generic[K, V]):
    """Concurrent calls with the same key share one run of the work. The work runs in
    a task of its own: a caller that goes away (a client disconnecting) does not
    cancel it for the others. Its result or exception goes to every caller that
    joined; the next call after it finished runs the work again."""

    def __init__(self) -> None:
        self._running: dict[K, asyncio.Future[V]] = {}

    def running(self, key: K) -> bool:
        return key in self._running

    async def run(self, key: K, work: Callable[[], Awaitable[V]]) -> V:
        future = self._running.get(key)
        if future is None:
            future = asyncio.ensure_future(work())
            self._running[key] = future
            future.add_done_callback(lambda done: self._finished(key, done))
        return await asyncio.shield(future)

    def _finished(self, key: K, done: asyncio.Future[V]) -> None:
        if self._running.get(key) is done:
            del self._running[key]
        if not done.cancelled():
            done.exception()  # retrieved, even if every caller went away
