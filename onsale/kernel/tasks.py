"""Background tasks: stopping them whatever the library under them does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Iterable
from typing import Any


async def stop_background(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel the tasks and wait until they have ended (cancelling again each
    second: a library may swallow one cancellation, see raise_if_cancelling)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        while not task.done():
            task.cancel()
            await asyncio.wait([task], timeout=1.0)
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def to_the_end(cleanup: Awaitable[Any]) -> None:
    """Run ``cleanup`` to its end even if this task is cancelled again meanwhile
    (``stop_background`` cancels once a second): for a task's ``finally`` that must stop
    what it started. A cancellation that arrived is not lost: the ``finally`` it runs in
    re-raises the first one when it ends, and a later one is raised here."""
    done = asyncio.ensure_future(cleanup)
    cancelled = False
    while not done.done():
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            cancelled = True
    done.result()
    if cancelled:
        raise asyncio.CancelledError
