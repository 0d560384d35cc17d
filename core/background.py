"""Start the Redis-backed background loops: outbox relay and ticket consumer (stop them
with ``onsale.kernel.tasks.stop_background``)."""

from __future__ import annotations

import asyncio
from typing import Any

from onsale.core.metrics import Metrics
from onsale.core.outbox_relay import DEFAULT_RETENTION_SECONDS, DEFAULT_STREAM_MAXLEN, run_relay
from onsale.core.tickets import run_ticket_consumer
from onsale.kernel.valkey import RedisClient


async def start_background(
    pool: Any, redis: RedisClient, metrics: Metrics, *,
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
