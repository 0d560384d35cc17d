"""onsale_expire_hold called directly beside another hold that is locked elsewhere
(docs/invariants.md#mutation-testing): an expiry takes its own hold's row lock only."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg

from tests.conftest import Api, audit_clean


async def _expired_hold(conn: Any, event_id: int, account: uuid.UUID,
                        seats: list[int]) -> uuid.UUID:
    row = await conn.fetchrow("SELECT status_code, body FROM onsale_hold($1, $2, $3, 'd', $4)",
                              event_id, account, uuid.uuid4().hex, seats)
    assert row["status_code"] == 201
    body = row["body"] if isinstance(row["body"], dict) else json.loads(row["body"])
    hold_id = uuid.UUID(body["hold_id"])
    past = await conn.fetchval("SELECT now() - interval '1 s'")  # one instant for both
    await conn.execute("UPDATE holds SET expires_at = $2 WHERE hold_id = $1", hold_id, past)
    await conn.execute("UPDATE seat_inventory SET hold_expires_at = $2 WHERE hold_id = $1",
                       hold_id, past)
    return hold_id


async def test_an_expiry_locks_its_own_hold_only(api: Api, conn: Any, db_url: str) -> None:
    event_id = await api.create_event(seats=20, max_tickets_per_account=10)
    ours = await _expired_hold(conn, event_id, await api.account(conn), [1, 2])
    other_hold = await _expired_hold(conn, event_id, await api.account(conn), [3])
    other = await asyncpg.connect(db_url)
    try:
        async with other.transaction():  # a checkout or a release in flight on the other
            await other.execute("SELECT 1 FROM holds WHERE hold_id = $1 FOR UPDATE", other_hold)
            async with conn.transaction():
                await conn.execute("SET LOCAL lock_timeout = '3s'")
                assert await conn.fetchval("SELECT onsale_expire_hold($1)", ours) == 2
    finally:
        await other.close()
    assert await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1", ours) == "EXPIRED"
    assert await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1",
                               other_hold) == "HELD"
    await audit_clean(conn)
