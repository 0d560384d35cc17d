"""Core health as the admission controller sees it: the fresh reports core
processes publish (core/health.py), folded into one ``Health`` snapshot."""

from __future__ import annotations

import json
import time
from typing import Any

from onsale.core.health import HEALTH_KEY
from onsale.edge.controller import Health
from onsale.kernel.valkey import RedisClient

FRESH_SECONDS = 5.0
FORGET_SECONDS = 3600.0


def fold(reports: list[dict[str, Any]], now: float, *, active: int, cap: int,
         shard: int | None = None) -> Health:
    """Pure: no fresh report = core down; any fresh report without its
    database = core unhealthy, and so is one without the event's ``shard``
    (a shard that is down pauses only its own events; docs/scaling.md).
    Latencies: the worst process; rates: pooled."""
    fresh = [r for r in reports if now - float(r.get("t", 0)) <= FRESH_SECONDS]
    if not fresh:
        return Health(core_ok=False, redis_ok=True, active=active, cap=cap)

    def worst(name: str) -> float | None:
        values = [float(r[name]) for r in fresh if r.get(name) is not None]
        return max(values) if values else None

    def ratio(num: str, den: str) -> float | None:
        total = sum(float(r.get(den, 0)) for r in fresh)
        return sum(float(r.get(num, 0)) for r in fresh) / total if total > 0 else None

    return Health(
        core_ok=all(bool(r.get("db_ok")) and _shard_ok(r, shard) for r in fresh),
        redis_ok=True,
        hold_p99_ms=worst("hold_p99_ms"), lock_wait_p99_ms=worst("lock_wait_p99_ms"),
        conflict_rate=ratio("conflicts", "attempts"),
        payment_error_rate=ratio("payment_errors", "answers"),
        completion_rate=ratio("authorized", "created"), active=active, cap=cap)


def _shard_ok(report: dict[str, Any], shard: int | None) -> bool:
    """A report names the shards other than the directory it asked; one it does not
    name (the directory, a shard it has not opened yet) is judged by ``db_ok``."""
    if shard is None or shard == 1:
        return True
    return bool(report.get("shards_ok", {}).get(str(shard), True))


class HealthSource:
    def __init__(self, redis: RedisClient) -> None:
        self.redis = redis

    async def snapshot(self, *, active: int, cap: int, shard: int | None = None) -> Health:
        now = time.time()
        try:
            raw = await self.redis.hgetall(HEALTH_KEY)
        except Exception:
            return Health(core_ok=True, redis_ok=False, active=active, cap=cap)
        reports: list[dict[str, Any]] = []
        stale: list[Any] = []
        for field, value in raw.items():
            try:
                doc = json.loads(value)
            except ValueError:
                stale.append(field)
                continue
            if now - float(doc.get("t", 0)) > FORGET_SECONDS:
                stale.append(field)  # a process that died without saying goodbye
            reports.append(doc)
        if stale:
            await self.redis.hdel(HEALTH_KEY, *stale)
        return fold(reports, now, active=active, cap=cap, shard=shard)
