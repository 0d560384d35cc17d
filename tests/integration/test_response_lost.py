"""The response is lost after the hold committed: the retry gets the same hold."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from onsale.kernel.sessions import COOKIE
from tests.conftest import Api, audit_clean


class LoseNextResponse:
    """ASGI wrapper: run the request to completion, then drop the response."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.armed = True

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.armed:
            await self.app(scope, receive, send)
            return

        async def swallow(message: Any) -> None:
            return None

        await self.app(scope, receive, swallow)
        self.armed = False
        raise ConnectionResetError("connection reset after the server committed")


async def test_retry_after_lost_response_returns_the_same_hold(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10)
    account = await api.account(conn)
    lossy = LoseNextResponse(api.app)
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=lossy), base_url="http://test",
        cookies={COOKIE: api.session_cookie(account)},
    )
    request = dict(json={"seat_ids": [4, 5]},
                   headers={"Idempotency-Key": "lost-1", **await api.admit(account, event_id)})
    async with client:
        with pytest.raises(ConnectionResetError):
            await client.post(f"/api/events/{event_id}/holds", **request)
        # The client never saw it, but the hold committed.
        assert await conn.fetchval("SELECT count(*) FROM holds") == 1
        before = await conn.fetchval(
            "SELECT (SELECT count(*) FROM holds) + (SELECT count(*) FROM outbox)"
            " + (SELECT count(*) FROM idempotency_keys)")
        retry = await client.post(f"/api/events/{event_id}/holds", **request)
    assert retry.status_code == 201
    assert retry.headers["idempotent-replayed"] == "true"
    stored = await conn.fetchrow("SELECT hold_id, expires_at FROM holds")
    assert retry.json()["hold_id"] == str(stored["hold_id"])
    after = await conn.fetchval(
        "SELECT (SELECT count(*) FROM holds) + (SELECT count(*) FROM outbox)"
        " + (SELECT count(*) FROM idempotency_keys)")
    assert after == before  # nothing new was written
    await audit_clean(conn)
