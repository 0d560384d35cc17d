"""The change capture's status as the operators' dashboard shows it: the replication
slot (present, active, WAL status, lag) and whether a consumer holds the lease, for
shard 1 at the top and, with more shards, for each under ``shards``."""

from __future__ import annotations

from typing import Any

from onsale.kernel.db import Database
from onsale.kernel.problems import Problem
from onsale.kernel.shards import ShardSet
from onsale.kernel.valkey import RedisClient
from onsale.seatmap.bus import capture_keys
from onsale.seatmap.queries import queries
from onsale.seatmap.shard_plan import slot_name as shard_slot


async def capture_status(db: Database, redis: RedisClient, slot_name: str,
                         shards: ShardSet | None = None) -> dict[str, Any]:
    doc = await shard_status(db, redis, slot_name, 1)
    if shards is not None and len(shards.pools) > 1:
        doc["shards"] = {str(i): await shard_status(shards.pools[i], redis,
                                                    shard_slot(slot_name, i), i)
                         for i in sorted(shards.pools)}
    return doc


async def shard_status(db: Database, redis: RedisClient, slot_name: str,
                       shard_id: int) -> dict[str, Any]:
    doc: dict[str, Any] = {"slot": slot_name}
    try:
        async with db.connection() as conn:
            slot = await conn.fetchrow(queries("cdc")["slot"], slot_name)
    except Problem:
        slot = None
        doc["available"] = False
    doc.update({"present": slot is not None,
                "active": bool(slot["active"]) if slot else False,
                "wal_status": slot["wal_status"] if slot else None,
                "lag_bytes": int(slot["lag_bytes"] or 0) if slot else None})
    try:
        doc["consumer_alive"] = bool(await redis.exists(capture_keys(shard_id).alive))
    except Exception:
        doc["consumer_alive"] = None
    return doc
