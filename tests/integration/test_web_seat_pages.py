"""The seat map, checkout and order pages against real PostgreSQL and Valkey:
who sees what, 404 pages in words, and that reading a page changes nothing."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import httpx
from redis.asyncio import Redis

from onsale.compose import build_app
from onsale.embedded import EmbeddedValkey
from onsale.kernel.session_store import SessionStore
from onsale.kernel.sessions import COOKIE
from onsale.web import seat_pages
from tests.conftest import Api, hold, make_settings
from tests.sessions_support import mint_cookie


def pages(api: Api) -> Api:
    """The core + edge app of the ``api`` fixture with these pages in front, as
    the core and dev roles mount them."""
    api.app.router.routes[:0] = seat_pages.routes
    return api


def page_data(html: str, element_id: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>',
                      html, re.S)
    assert found is not None, element_id
    return json.loads(found.group(1))


async def test_the_seat_map_page_needs_a_session_and_a_real_event(api: Api, conn: Any) -> None:
    pages(api)
    event_id = await api.create_event(seats=20, max_seats_per_hold=4)
    async with api.client() as c:
        r = await c.get(f"/events/{event_id}/seats")
        assert r.status_code == 303
        assert r.headers["location"] == f"/signin?next=/events/{event_id}/seats"
    async with api.client(await api.account(conn)) as c:
        r = await c.get(f"/events/{event_id}/seats")
        assert r.status_code == 200
        assert '<canvas id="seat-canvas"' in r.text and 'id="hold-button"' in r.text
        data = page_data(r.text, "seat-page-data")
        assert data["event"]["event_id"] == event_id
        assert data["event"]["max_seats_per_hold"] == 4
        assert data["queue_url"] == f"/events/{event_id}/queue"
        for missing in ("9999", "not-a-number", "0"):
            r = await c.get(f"/events/{missing}/seats")
            assert r.status_code == 404
            assert "We could not find this event." in r.text
            assert "Traceback" not in r.text and '"code"' not in r.text


async def test_the_checkout_page_shows_the_hold_to_its_owner_only(api: Api, conn: Any) -> None:
    pages(api)
    event_id = await api.create_event(seats=20)
    owner, stranger = await api.account(conn), await api.account(conn)
    async with api.client(owner) as c:
        held = await hold(c, event_id, [3, 4])
        assert held.status_code == 201, held.text
        hold_id = held.json()["hold_id"]
        r = await c.get(f"/checkout/{hold_id}")
        assert r.status_code == 200
        assert "These seats are held for you" in r.text
        assert re.search(r"<td>Section S1, row A, seat 3</td><td>Premium</td>"
                         r"<td>150.00 USD</td>", r.text)
        assert '<th id="hold-total">300.00 USD</th>' in r.text
        assert f'data-expires-at="{held.json()["expires_at"]}"' in r.text
        data = page_data(r.text, "checkout-data")
        assert data["hold"]["hold_id"] == hold_id and data["hold"]["status"] == "HELD"
        assert data["seats_url"] == f"/events/{event_id}/seats"
        for missing in (str(uuid.uuid4()), "not-a-uuid"):
            r = await c.get(f"/checkout/{missing}")
            assert r.status_code == 404 and "We could not find these seats" in r.text
        released = await c.delete(f"/api/holds/{hold_id}")
        assert released.json()["status"] == "RELEASED"
        r = await c.get(f"/checkout/{hold_id}")
        assert "This hold was released." in r.text
        assert re.search(r'<form id="pay-form"[^>]*hidden', r.text)
    async with api.client(stranger) as c:
        r = await c.get(f"/checkout/{hold_id}")
        assert r.status_code == 404 and "We could not find these seats" in r.text
    async with api.client() as c:
        r = await c.get(f"/checkout/{hold_id}")
        assert r.status_code == 303 and r.headers["location"].startswith("/signin?next=")


async def begun_order(api: Api, conn: Any) -> tuple[uuid.UUID, uuid.UUID]:
    """(owner, order id) of an order whose payment has started (PENDING)."""
    event_id = await api.create_event(seats=5)
    owner = await api.account(conn)
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k', 'd', $3)",
                              event_id, owner, [1])
    hold_id = uuid.UUID(row["body"]["hold_id"])
    begun = await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, 'pay', 'd', 'card_4242', 600, 0, 30)",
        hold_id, owner)
    return owner, begun["order_id"]


async def test_the_order_page_shows_the_order_to_its_owner_only_and_only_reads(
        api: Api, conn: Any) -> None:
    pages(api)
    owner, order_id = await begun_order(api, conn)
    before = await conn.fetchval("SELECT updated_at FROM orders")
    async with api.client(owner) as c:
        r = await c.get(f"/orders/{order_id}")
        assert r.status_code == 200
        assert 'data-status="PENDING"' in r.text and 'data-order-status="PENDING"' in r.text
        assert "We are waiting for your payment." in r.text
        assert "This page updates by itself." in r.text
        assert not re.search(r'id="order-following"[^>]*hidden', r.text)
        assert "<td>Section S1, row A, seat 1</td>" in r.text
        data = page_data(r.text, "order-data")
        assert data["order"]["order_id"] == str(order_id) and data["done"] is False
        for missing in ("not-a-uuid", str(uuid.uuid4())):
            r = await c.get(f"/orders/{missing}")
            assert r.status_code == 404
            assert "We could not find this order for your account." in r.text
    async with api.client(await api.account(conn)) as c:
        r = await c.get(f"/orders/{order_id}")
        assert r.status_code == 404 and str(order_id) not in r.text
    async with api.client() as c:
        r = await c.get(f"/orders/{order_id}")
        assert r.status_code == 303
        assert r.headers["location"] == f"/signin?next=/orders/{order_id}"
    assert await conn.fetchval("SELECT updated_at FROM orders") == before  # read only


async def test_the_dev_role_serves_this_order_page_at_the_return_url(
        api: Api, conn: Any, db_url: str, valkey: EmbeddedValkey) -> None:
    """Checkout's 3-D Secure return URL is ONSALE_PUBLIC_URL/orders/{id}: the dev
    (and core) role must answer it with this page."""
    owner, order_id = await begun_order(api, conn)
    cookie = mint_cookie(make_settings(db_url, redis_url=valkey.url), owner)
    redis = Redis.from_url(valkey.url)
    for role in ("dev", "core"):
        app = build_app(role, make_settings(db_url))  # no REDIS_URL: no queue, no seat map,
        app.state.shared.sessions.attach(SessionStore(redis))  # but sessions live in Valkey
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t",
                                         cookies={COOKIE: cookie}) as c:
                r = await c.get(f"/orders/{order_id}")
                assert r.status_code == 200, role
                assert 'id="order-status"' in r.text and 'data-status="PENDING"' in r.text
    await redis.aclose()
