"""The ticket consumer: issues tickets from ``order.confirmed`` on ``onsale:outbox``.

A Redis consumer group (``tickets``). Each ``order.confirmed`` calls
``onsale_issue_tickets(order_id)``, which is idempotent: ``issued``,
``duplicate`` and ``cancelled`` are acknowledged; ``wait`` (payment not
captured yet) is left pending and retried by XAUTOCLAIM once it has been idle
for ``min_idle_ms``, as are the deliveries of a consumer that crashed. Every
other message type is acknowledged and ignored.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import asyncpg
from redis.exceptions import ResponseError

from onsale.core.metrics import Metrics
from onsale.core.outbox_relay import STREAM, backoff, raise_if_cancelling
from onsale.core.queries import queries
from onsale.kernel.failures import Failures
from onsale.kernel.valkey import RedisClient

log = logging.getLogger("onsale.tickets")

GROUP = "tickets"
ORDER_CONFIRMED = "order.confirmed"
DEFAULT_MIN_IDLE_MS = 2000
DEFAULT_COUNT = 100
RECLAIM_ROUNDS = 10  # XAUTOCLAIM calls per reclaim cycle, at most
STALE_CONSUMER_MS = 3600 * 1000

Entry = tuple[Any, Any]  # (message id, {field: value}) as redis-py returns them


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def decode_fields(fields: Mapping[Any, Any]) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in fields.items()}


def order_id_of(fields: Mapping[str, str]) -> uuid.UUID | None:
    """The order id of an ``order.confirmed`` entry; None if malformed."""
    try:
        payload = json.loads(fields["payload"])
        return uuid.UUID(str(payload["order_id"]))
    except (KeyError, TypeError, ValueError):
        return None


async def ensure_group(redis: RedisClient) -> None:
    """Create the group (and the stream) reading from the start; exists → fine."""
    try:
        await redis.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    except ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


async def issue_tickets(conn: Any, order_id: uuid.UUID) -> tuple[str, int]:
    """``onsale_issue_tickets`` plus how many tickets this call wrote."""
    q = queries("tickets")
    async with conn.transaction():
        outcome: str = await conn.fetchval(q["issue_tickets"], order_id)
        issued: int = await conn.fetchval(q["issued_here"], order_id) if outcome == "issued" else 0
    return outcome, issued


# The pool of the shard that made an order (its id names it), None when that shard is
# not open here; absent: every order is on the one pool given.
PoolOf = Callable[[uuid.UUID], Any]


async def handle_entries(pool: Any, redis: RedisClient, metrics: Metrics,
                         entries: Iterable[Entry], pool_of: PoolOf | None = None) -> list[str]:
    """Process entries in order, acknowledge all but ``wait``. Returns the verdicts.
    The orders of one shard are issued in one transaction (``issue_batch``)."""
    verdicts: list[str] = []
    ids: list[Any] = []
    todo: dict[int, tuple[Any, list[tuple[int, uuid.UUID]]]] = {}  # by pool: its entries
    for msg_id, raw in entries:
        if msg_id is None or raw is None:  # deleted from the stream while pending
            continue
        n = len(verdicts)
        verdict, order_id, order_pool = _triage(pool, metrics, decode_fields(raw), pool_of)
        verdicts.append(verdict)
        ids.append(msg_id)
        if order_id is not None:
            todo.setdefault(id(order_pool), (order_pool, []))[1].append((n, order_id))
    for order_pool, orders in todo.values():
        outcomes = await issue_batch(order_pool, [o for _, o in orders])
        issued = 0
        for n, order_id in orders:
            verdicts[n], count = outcomes.pop(order_id, ("duplicate", 0))  # a repeat: once
            issued += count
        metrics.tickets_issued.inc(issued)
    acks = [msg_id for msg_id, verdict in zip(ids, verdicts, strict=True) if verdict != "wait"]
    if acks:
        await redis.xack(STREAM, GROUP, *acks)
    return verdicts


def _triage(pool: Any, metrics: Metrics, fields: Mapping[str, str],
            pool_of: PoolOf | None = None) -> tuple[str, uuid.UUID | None, Any]:
    """An entry's verdict without the database, or the order to issue and its pool."""
    if fields.get("type") != ORDER_CONFIRMED:
        return "ignored", None, None
    order_id = order_id_of(fields)
    if order_id is None:
        metrics.ticket_consumer_errors.inc()
        log.error("order.confirmed without a valid order_id, dropped: %r", fields)
        return "malformed", None, None
    if pool_of is not None:
        pool = pool_of(order_id)
        if pool is None:  # its shard is not open here (yet): left pending, reclaimed later
            log.warning("order %s: its shard is not open in this process", order_id)
            return "wait", None, None
    return "issue", order_id, pool


async def issue_batch(pool: Any, order_ids: list[uuid.UUID]) -> dict[uuid.UUID, tuple[str, int]]:
    """``issue_tickets`` for several orders of one shard in one transaction (each its
    outcome and the tickets written for it); if that transaction fails, each alone."""
    distinct = list(dict.fromkeys(order_ids))
    async with pool.acquire() as conn:
        if len(distinct) > 1:
            try:
                q = queries("tickets")
                async with conn.transaction():
                    rows = await conn.fetch(q["issue_tickets_batch"], distinct)
                    counts = {r["order_id"]: int(r["issued"])
                              for r in await conn.fetch(q["issued_here_batch"], distinct)}
                return {r["order_id"]: (r["outcome"], counts.get(r["order_id"], 0))
                        for r in rows}
            except asyncpg.PostgresError as exc:
                log.warning("issuing %d orders' tickets together failed (%s); each alone",
                            len(distinct), type(exc).__name__)
        return {o: await issue_tickets(conn, o) for o in distinct}


def _stream_entries(response: Any) -> list[Entry]:
    """XREADGROUP's reply for our one stream, whichever shape redis-py gives it."""
    if not response:
        return []
    pairs = response.items() if isinstance(response, dict) else response
    out: list[Entry] = []
    for _stream, entries in pairs:
        out.extend(entries or [])
    return out


async def consume_once(pool: Any, redis: RedisClient, metrics: Metrics, consumer: str, *,
                       count: int = DEFAULT_COUNT, block_ms: int | None = 1000,
                       pool_of: PoolOf | None = None) -> list[str]:
    """Read and handle new entries (XREADGROUP ``>``). Returns the verdicts."""
    response = await redis.xreadgroup(GROUP, consumer, {STREAM: ">"}, count=count,
                                      block=block_ms)
    return await handle_entries(pool, redis, metrics, _stream_entries(response), pool_of)


async def reclaim_once(pool: Any, redis: RedisClient, metrics: Metrics, consumer: str, *,
                       min_idle_ms: int = DEFAULT_MIN_IDLE_MS,
                       count: int = DEFAULT_COUNT, pool_of: PoolOf | None = None) -> list[str]:
    """Take over and handle entries pending longer than ``min_idle_ms`` (this
    consumer's ``wait`` entries and those of crashed consumers)."""
    verdicts: list[str] = []
    start: Any = "0-0"
    for _ in range(RECLAIM_ROUNDS):
        reply = await redis.xautoclaim(STREAM, GROUP, consumer, min_idle_ms, start_id=start,
                                       count=count)
        start, entries = reply[0], reply[1]
        gone: Sequence[Any] = reply[2] if len(reply) > 2 else []
        if gone:
            metrics.ticket_consumer_errors.inc(len(gone))
            log.error("pending entries trimmed from %s before they were handled: %r",
                      STREAM, gone)
        verdicts += await handle_entries(pool, redis, metrics, entries, pool_of)
        if _text(start) == "0-0":
            break
    return verdicts


async def update_pending(redis: RedisClient, metrics: Metrics) -> int:
    summary = await redis.xpending(STREAM, GROUP)
    pending = int(summary["pending"])
    metrics.ticket_consumer_pending.set(pending)
    return pending


async def forget_idle_consumers(redis: RedisClient, idle_ms: int = STALE_CONSUMER_MS) -> None:
    """Drop consumers of past processes (nothing pending, idle for an hour)."""
    for info in await redis.xinfo_consumers(STREAM, GROUP):
        if int(info["pending"]) == 0 and int(info["idle"]) > idle_ms:
            await redis.xgroup_delconsumer(STREAM, GROUP, info["name"])


async def run_ticket_consumer(
    pool: Any, redis: RedisClient, metrics: Metrics, *, consumer: str | None = None,
    min_idle_ms: int = DEFAULT_MIN_IDLE_MS, count: int = DEFAULT_COUNT,
    interval: float = 0.2, pool_of: PoolOf | None = None,
) -> None:
    """Consume forever. Outages are logged, counted and retried with backoff;
    unacknowledged entries stay pending and are reclaimed."""
    name = consumer or consumer_name()
    loop = asyncio.get_running_loop()
    block_ms = max(10, min(1000, min_idle_ms))
    group_ready = False
    next_reclaim = loop.time()
    trouble = Failures(log, "the ticket consumer")
    while True:
        raise_if_cancelling()
        try:
            if not group_ready:
                await ensure_group(redis)
                await forget_idle_consumers(redis)
                group_ready = True
            if loop.time() >= next_reclaim:
                await reclaim_once(pool, redis, metrics, name, min_idle_ms=min_idle_ms,
                                   count=count, pool_of=pool_of)
                await update_pending(redis, metrics)
                next_reclaim = loop.time() + min_idle_ms / 1000
            await consume_once(pool, redis, metrics, name, count=count, block_ms=block_ms,
                               pool_of=pool_of)
            trouble.succeeded()
            continue
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # outages and bugs alike: log, count, back off, retry
            if "NOGROUP" in str(exc):  # the stream was deleted or Redis lost its data
                group_ready = False
            metrics.ticket_consumer_errors.inc()
            trouble.failed(exc)
        await asyncio.sleep(backoff(trouble.count, interval))
