"""Start and stop the Redis-backed background loops: outbox relay and ticket consumer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

from redis.asyncio import Redis

from onsale.core.metrics import Metrics
from onsale.core.outbox_relay import DEFAULT_RETENTION_SECONDS, DEFAULT_STREAM_MAXLEN, run_relay
from onsale.core.tickets import run_ticket_consumer


async def start_background(
    pool: Any, redis: Redis, metrics: Metrics, *,
    stream_maxlen: int = DEFAULT_STREAM_MAXLEN,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS, crash_at: str | None = None,
) -> list[asyncio.Task[None]]:
    """The relay and the ticket consumer as tasks; cancel them with ``stop_background``."""
    return [
        asyncio.create_task(
            run_relay(pool, redis, metrics, stream_maxlen=stream_maxlen,
                      retention_seconds=retention_seconds, crash_at=crash_at),
            name="onsale-outbox-relay",
        ),
        asyncio.create_task(run_ticket_consumer(pool, redis, metrics),
                            name="onsale-ticket-consumer"),
    ]


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
