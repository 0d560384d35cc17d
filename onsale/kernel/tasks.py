"""Background tasks: stopping them whatever the library under them does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
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
