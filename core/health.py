"""Core's health signals for the edge's admission controller (docs/edge.md).

Each core process publishes, once a second, a small report of the last ten
seconds into one Redis hash (field = process id): whether its database
answers, the hold p99, the lock-wait p99, the conflict rate, the payment
error rate and the completion rate. The admitter reads the hash and ignores
reports older than a few seconds: no fresh report at all means core is down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import time
from collections import deque
from typing import Any

from onsale.core.metrics import Metrics
from onsale.core.payment_state import PaymentOutcome
from onsale.kernel.db import Database
from onsale.kernel.dependency import is_outage
from onsale.kernel.shards import ShardSet
from onsale.kernel.valkey import RedisClient

HEALTH_KEY = "onsale:health:core"
WINDOW_SECONDS = 10.0
PAYMENT_ERRORS = (PaymentOutcome.UNKNOWN, PaymentOutcome.CAPTURE_FAILED,
                  PaymentOutcome.VOID_FAILED)

log = logging.getLogger("onsale.health")


def _samples(metric: Any, suffix: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for family in metric.collect() for s in family.samples
            if s.name.endswith(suffix)]


def snapshot(metrics: Metrics) -> dict[str, Any]:
    """Cumulative counts now (histogram buckets by bound, counters by label)."""
    def buckets(metric: Any) -> dict[str, float]:
        return {labels["le"]: value for labels, value in _samples(metric, "_bucket")}

    outcomes = {labels["code"]: v for labels, v in _samples(metrics.hold_outcomes, "_total")}
    payments: dict[str, float] = {}
    for labels, v in _samples(metrics.payment_outcomes, "_total"):
        payments[labels["outcome"]] = payments.get(labels["outcome"], 0.0) + v
    return {"hold": buckets(metrics.hold_latency), "lock": buckets(metrics.lock_wait),
            "outcomes": outcomes, "payments": payments}


def p99_ms(before: dict[str, float], after: dict[str, float]) -> float | None:
    """The 99th percentile of the observations between two snapshots, as the
    upper bound of its bucket (the last finite bound doubled past it)."""
    bounds = sorted(after, key=lambda le: float(le))
    total = after.get("+Inf", 0.0) - before.get("+Inf", 0.0)
    if total <= 0:
        return None
    finite = [b for b in bounds if b != "+Inf"]
    for le in bounds:
        if after[le] - before.get(le, 0.0) >= 0.99 * total:
            return (float(le) if le != "+Inf" else 2 * float(finite[-1])) * 1000
    return None


def _delta(before: dict[str, float], after: dict[str, float], keys: Any = None) -> float:
    names = after.keys() if keys is None else keys
    return sum(after.get(k, 0.0) - before.get(k, 0.0) for k in names)


def report(before: dict[str, Any], after: dict[str, Any], db_ok: bool,
           shards_ok: dict[str, bool] | None = None) -> dict[str, Any]:
    """``db_ok``: the directory answers; ``shards_ok``: each other shard, by id (the
    admitter pauses only the events of a shard that does not answer)."""
    attempts = _delta(before["outcomes"], after["outcomes"])
    conflicts = _delta(before["outcomes"], after["outcomes"], ("seats_unavailable",))
    created = _delta(before["outcomes"], after["outcomes"], ("created",))
    answers = _delta(before["payments"], after["payments"])
    errors = _delta(before["payments"], after["payments"], PAYMENT_ERRORS)
    authorized = _delta(before["payments"], after["payments"], (PaymentOutcome.AUTHORIZED,))
    return {
        "t": time.time(), "db_ok": db_ok, "shards_ok": shards_ok or {},
        "hold_p99_ms": p99_ms(before["hold"], after["hold"]),
        "lock_wait_p99_ms": p99_ms(before["lock"], after["lock"]),
        "attempts": attempts, "conflicts": conflicts, "created": created,
        "answers": answers, "payment_errors": errors, "authorized": authorized,
    }


def process_id() -> str:
    """Host, pid and a random tag: two apps in one process report separately."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


async def database_ok(db: Database, within: float = 1.0) -> bool:
    """The database answers and is serving: not failed over and waiting to be resumed
    (onsale_shard_serving; the admitter pauses its events meanwhile)."""
    try:
        async with asyncio.timeout(within), db.connection() as conn:
            await conn.fetchval("SELECT onsale_shard_serving()")
        return True
    except Exception:
        return False


async def shards_ok(shards: ShardSet | None) -> dict[str, bool]:
    """Whether each shard other than the directory answers, asked at once."""
    if shards is None:
        return {}
    others = sorted(i for i in shards.pools if i != 1)
    answers = await asyncio.gather(*(database_ok(shards.pools[i]) for i in others))
    return {str(i): ok for i, ok in zip(others, answers, strict=True)}


async def run_health_reporter(db: Database, redis: RedisClient, metrics: Metrics,
                              interval: float = 1.0, shards: ShardSet | None = None) -> None:
    me = process_id()
    window: deque[dict[str, Any]] = deque(maxlen=int(WINDOW_SECONDS / interval) + 1)
    try:
        while True:
            window.append(snapshot(metrics))
            ok, others = await asyncio.gather(database_ok(db), shards_ok(shards))
            doc = report(window[0], window[-1], ok, others)
            try:
                await redis.hset(HEALTH_KEY, me, json.dumps(doc))
            except Exception as exc:
                if not is_outage(exc):  # an outage is logged once, by the breaker
                    log.warning("publishing core health failed: %s", exc)
            await asyncio.sleep(interval)
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(redis.hdel(HEALTH_KEY, me))
