"""The change capture's status as the operators' dashboard shows it: the replication
slot (present, active, WAL status, lag) and whether a consumer holds the lease."""

from __future__ import annotations

from typing import Any

from onsale.kernel.db import Database
from onsale.kernel.problems import Problem
from onsale.kernel.valkey import RedisClient
from onsale.seatmap.bus import ALIVE
from onsale.seatmap.queries import queries


async def capture_status(db: Database, redis: RedisClient, slot_name: str) -> dict[str, Any]:
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
        doc["consumer_alive"] = bool(await redis.exists(ALIVE))
    except Exception:
        doc["consumer_alive"] = None
    return doc
