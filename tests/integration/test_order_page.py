"""The page the provider sends a shopper back to after 3-D Secure only reads."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from core.sessions import COOKIE
from onsale.compose import build_app
from tests.conftest import Api, make_settings


async def test_order_page_shows_the_order_to_its_owner_only(api: Api, conn: Any,
                                                            db_url: str) -> None:
    event_id = await api.create_event(seats=5)
    owner = await api.account(conn)
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k', 'd', $3)",
                              event_id, owner, [1])
    hold_id = uuid.UUID(row["body"]["hold_id"])
    begun = await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, 'pay', 'd', 'card_4242', 600, 0, 30)",
        hold_id, owner)
    app = build_app("dev", make_settings(db_url))
    async with app.router.lifespan_context(app):
        sessions = app.state.sessions
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t",
                                     cookies={COOKIE: sessions.encode(owner)}) as c:
            page = await c.get(f"/orders/{begun['order_id']}")
            assert page.status_code == 200
            assert "waiting for your payment" in page.text and "refresh" in page.text
            before = await conn.fetchval("SELECT updated_at FROM orders")
            assert (await c.get("/orders/not-a-uuid")).status_code == 404
        stranger = await api.account(conn)
        async with httpx.AsyncClient(transport=transport, base_url="http://t",
                                     cookies={COOKIE: sessions.encode(stranger)}) as c:
            assert (await c.get(f"/orders/{begun['order_id']}")).status_code == 404
    assert await conn.fetchval("SELECT updated_at FROM orders") == before  # read only
