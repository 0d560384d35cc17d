"""The outbox relay: committed outbox rows to the Redis stream ``onsale:outbox``.

At least once and never skipping a row: a batch is claimed (``FOR UPDATE SKIP
LOCKED``, under a transaction-scoped advisory lock so one relay publishes at
a time), sent with one MULTI/EXEC of XADDs, and marked published in the same
Postgres transaction only after Redis acknowledged it. A crash in between
republishes the batch; consumers dedupe. Why the claim never overtakes a row
that commits late is in docs/outbox.md.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import orjson

from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.kernel.failures import Failures
from onsale.kernel.timefmt import utc_iso
from onsale.kernel.valkey import RedisClient

log = logging.getLogger("onsale.outbox")

STREAM = "onsale:outbox"
DEFAULT_BATCH = 500
DEFAULT_STREAM_MAXLEN = 1_000_000
DEFAULT_RETENTION_SECONDS = 7 * 86400
PUBLISH_TIMEOUT_SECONDS = 10.0
PRUNE_EVERY_SECONDS = 60.0
PRUNE_BATCH = 1000
PRUNE_BUDGET_SECONDS = 0.5
BACKLOG_EVERY_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 5.0

# Called with the ids of a batch after Redis acknowledged it and before the
# rows are marked published: tests use it to crash at exactly that point.
AfterPublish = Callable[[Sequence[int]], Awaitable[None]]


def message_fields(row: Mapping[str, Any]) -> dict[str, str]:
    """The stream entry for one outbox row (every value is text)."""
    payload = row["payload"]
    if not isinstance(payload, str):  # decoded by the pool's jsonb codec
        # orjson: a tenth of the standard library's time, the same compact, sorted text
        # (only non-ASCII characters are written as themselves, not as \u escapes)
        payload = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS).decode()
    return {
        "outbox_id": str(row["outbox_id"]),
        "event_id": str(row["event_id"]),
        "aggregate_id": str(row["aggregate_id"]),
        "type": str(row["event_type"]),
        "payload": payload,
        "created_at": utc_iso(row["created_at"]),
    }


def backoff(failures: int, interval: float, cap: float = MAX_BACKOFF_SECONDS) -> float:
    """Pause after the n-th consecutive failure: doubling from ``interval``, capped."""
    if failures <= 0:
        return interval
    return float(min(cap, interval * 2 ** min(failures, 30)))


def raise_if_cancelling() -> None:
    """Re-raise a cancellation that was swallowed on the way.

    On Python 3.11 ``asyncio.wait_for``, which redis-py wraps around every
    command write, can return normally when the cancellation arrives just as
    the write completes. The task still counts the request, so a loop that
    checks here each round still stops when it is cancelled.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def publish(redis: RedisClient, rows: Sequence[Mapping[str, Any]],
                  stream_maxlen: int) -> None:
    """XADD every row in one MULTI/EXEC; returns once Redis acknowledged all of them."""
    async with redis.pipeline(transaction=True) as pipe:
        for row in rows:
            pipe.xadd(STREAM, message_fields(row),  # type: ignore[arg-type]
                      maxlen=stream_maxlen, approximate=True)
        async with asyncio.timeout(PUBLISH_TIMEOUT_SECONDS):
            await pipe.execute()


async def relay_once(
    conn: Any, redis: RedisClient, *, batch: int = DEFAULT_BATCH,
    stream_maxlen: int = DEFAULT_STREAM_MAXLEN, after_publish: AfterPublish | None = None,
    before_publish: AfterPublish | None = None,
) -> int:
    """Publish one batch; returns rows published (0 when another relay holds the lock)."""
    q = queries("outbox")
    async with conn.transaction():
        if not await conn.fetchval(q["try_relay_lock"]):
            return 0
        rows = await conn.fetch(q["claim_batch"], batch)
        if not rows:
            return 0
        ids = [row["outbox_id"] for row in rows]
        if before_publish is not None:
            await before_publish(ids)
        await publish(redis, rows, stream_maxlen)
        if after_publish is not None:
            await after_publish(ids)
        await conn.execute(q["mark_published"], ids)
    return len(rows)


async def relay_pass(
    conn: Any, redis: RedisClient, metrics: Metrics | None = None, *, batch: int = DEFAULT_BATCH,
    stream_maxlen: int = DEFAULT_STREAM_MAXLEN, after_publish: AfterPublish | None = None,
    before_publish: AfterPublish | None = None,
) -> int:
    """Relay batches until one comes back short. Returns rows published."""
    total = 0
    while True:
        n = await relay_once(conn, redis, batch=batch, stream_maxlen=stream_maxlen,
                             after_publish=after_publish, before_publish=before_publish)
        total += n
        if metrics is not None and n:
            metrics.outbox_published.inc(n)
        if n < batch:
            return total


async def update_backlog(conn: Any, metrics: Metrics) -> None:
    row = await conn.fetchrow(queries("outbox")["backlog"])
    metrics.outbox_backlog.set(row["backlog"])
    metrics.outbox_oldest_unpublished.set(row["oldest_age"])


async def prune_published(
    conn: Any, retention_seconds: float = DEFAULT_RETENTION_SECONDS, *,
    batch: int = PRUNE_BATCH, budget_seconds: float | None = None,
) -> tuple[int, bool]:
    """Delete published rows older than the retention, in batches.

    Returns (rows deleted, finished); ``finished`` is False when the time
    budget ran out with rows possibly left to prune.
    """
    sql = queries("outbox")["prune"]
    loop = asyncio.get_running_loop()
    stop_at = None if budget_seconds is None else loop.time() + budget_seconds
    total = 0
    while True:
        status = await conn.execute(sql, float(retention_seconds), batch)
        deleted = int(status.split()[-1])
        total += deleted
        if deleted == 0:
            return total, True
        if stop_at is not None and loop.time() >= stop_at:
            return total, False


async def run_relay(
    pool: Any, redis: RedisClient, metrics: Metrics, interval: float = 0.2,
    batch: int = DEFAULT_BATCH, *, stream_maxlen: int = DEFAULT_STREAM_MAXLEN,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS, crash_at: str | None = None,
) -> None:
    """Relay forever. Redis or Postgres outages are logged, counted and retried
    with backoff; nothing is lost, the backlog waits in the outbox table."""
    loop = asyncio.get_running_loop()
    next_prune = loop.time()
    next_backlog = loop.time()
    trouble = Failures(log, "the outbox relay")
    while True:
        raise_if_cancelling()
        try:
            async with pool.acquire() as conn:
                await relay_pass(conn, redis, metrics, batch=batch, stream_maxlen=stream_maxlen,
                                 before_publish=_crash_hook(crash_at, "before_outbox_publish"),
                                 after_publish=_crash_hook(crash_at, "after_outbox_publish"))
                trouble.succeeded()
                if loop.time() >= next_prune:
                    _, finished = await prune_published(
                        conn, retention_seconds, budget_seconds=PRUNE_BUDGET_SECONDS)
                    next_prune = loop.time() + (PRUNE_EVERY_SECONDS if finished else 0.0)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # outages and bugs alike: log, count, back off, retry
            metrics.outbox_relay_errors.inc()
            trouble.failed(exc)
        if loop.time() >= next_backlog or trouble.count:
            await _refresh_backlog(pool, metrics)
            next_backlog = loop.time() + BACKLOG_EVERY_SECONDS
        await asyncio.sleep(backoff(trouble.count, interval))


async def _refresh_backlog(pool: Any, metrics: Metrics) -> None:
    """The backlog gauges; also (especially) while Redis is down."""
    try:
        async with pool.acquire() as conn:
            await update_backlog(conn, metrics)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.debug("outbox backlog not measured: %r", exc)


def _crash_hook(crash_at: str | None, point: str) -> AfterPublish | None:
    """Test hook (ONSALE_CRASH_AT): die as kill -9 would, around the publish."""
    if crash_at != point:
        return None

    async def crash(ids: Sequence[int]) -> None:
        os.kill(os.getpid(), signal.SIGKILL)
    return crash
