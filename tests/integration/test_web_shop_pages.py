"""The shopper pages against real PostgreSQL and Valkey: core with the edge
mounted and the pages in front, as ``onsale dev`` serves them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio

from onsale.compose import build_app
from onsale.embedded import EmbeddedValkey
from onsale.kernel.sessions import COOKIE
from onsale.web.pages import page_routes
from tests.conftest import Api, build_api_app, make_settings


@pytest.fixture
async def site(db_url: str, valkey: EmbeddedValkey,
               redis_client: redis.asyncio.Redis) -> AsyncIterator[Api]:
    app = build_api_app(make_settings(db_url, redis_url=valkey.url))
    app.router.routes[:0] = page_routes()
    async with app.router.lifespan_context(app):
        yield Api(app)


def words(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


async def test_pages_show_the_events_the_api_lists(site: Api) -> None:
    fifo = await site.create_event(name="Early bird", queue_policy="fifo",
                                   onsale_at="2030-01-02T03:04:05Z",
                                   price_tiers=[{"name": "Floor", "price_minor": 12000}])
    drawn = await site.create_event(name="Lottery", queue_policy="random",
                                    onsale_at="2030-01-02T18:45:00Z")
    async with site.client() as c:
        home = await c.get("/")
        page = await c.get(f"/events/{fifo}")
        lottery = await c.get(f"/events/{drawn}")
        api_doc = (await c.get(f"/api/events/{drawn}")).json()
        missing = await c.get("/events/424242")
    assert f'href="/events/{fifo}"' in home.text and f'href="/events/{drawn}"' in home.text
    text = words(page.text)
    assert "Early bird" in text and "Floor" in text and "120.00 USD" in text
    assert "Wed 2 Jan 2030, 03:04 UTC" in text and "first come, first served" in text
    assert "random draw at 18:45 UTC for everyone who arrives before" in words(lottery.text)
    assert api_doc["queue"]["draw"]["commitment"] in lottery.text
    assert missing.status_code == 404 and "We could not find this event." in missing.text


async def test_waiting_room_knows_a_returning_browser_and_shows_the_seed(
        site: Api, conn: Any) -> None:
    event_id = await site.create_event(queue_policy="random",
                                       onsale_at="2030-01-02T18:45:00Z")
    account = await site.account(conn)
    async with site.client(account, admit=False) as c:
        first = await c.get(f"/events/{event_id}/queue")
        assert first.status_code == 200 and 'data-joined="false"' in first.text
        joined = await c.post(f"/api/events/{event_id}/queue", json={})
        assert joined.status_code == 200 and joined.json()["state"] == "prequeue"
        assert f"onsale_queue_{event_id}" in c.cookies  # the browser keeps its ticket
        again = await c.get(f"/events/{event_id}/queue")
        assert 'data-joined="true"' in again.text
        assert 'id="wr-draw-pending" class="muted" >' in again.text  # seed not revealed
    await conn.execute("UPDATE events SET draw_seed = $2, drawn_at = now() WHERE event_id = $1",
                       event_id, "5eed" * 16)
    async with site.client(account, admit=False) as c:
        drawn = await c.get(f"/events/{event_id}/queue")
    assert "5eed" * 16 in drawn.text and 'id="wr-draw-pending" class="muted" hidden' in drawn.text


async def test_dev_role_serves_the_event_list_at_the_root(db_url: str) -> None:
    app = build_app("dev", make_settings(db_url))  # no Redis: core and the pages only
    async with app.router.lifespan_context(app):
        api = Api(app)
        await api.create_event(name="Root show")
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as c:
            home = await c.get("/")
            signin = await c.get("/signin?next=/events/1/queue")
            out = await c.post("/signout", headers={"Cookie": f"{COOKIE}=whatever"})
    assert home.status_code == 200 and "Root show" in home.text
    assert 'id="signin-submit"' in signin.text
    assert out.status_code == 303 and 'onsale_session=""' in out.headers["set-cookie"]


async def test_an_events_times_are_shown_at_its_venue_and_kept_in_utc_by_the_api(
        site: Api) -> None:
    """Issue 28, time zones: set at creation, kept in UTC by the API, shown in the
    venue's zone on the pages, on both sides of a daylight-saving change."""
    event_id = await site.create_event(
        name="Spring forward", queue_policy="fifo", time_zone="Europe/Berlin",
        prequeue_at="2030-03-31T00:30:00Z",      # 01:30 CET, before the change
        onsale_at="2030-03-31T01:30:00Z",        # 03:30 CEST, after it
        starts_at="2030-04-05T17:30:00Z")
    async with site.client() as c:
        doc = (await c.get(f"/api/events/{event_id}")).json()
        page = words((await c.get(f"/events/{event_id}")).text)
        html = (await c.get(f"/events/{event_id}")).text
        home = words((await c.get("/")).text)
        wrong = await site.admin_post("/api/ops/events", {"name": "Atlantis night",
                                                          "time_zone": "Europe/Atlantis"})
        utc = (await c.get(f"/api/events/{await site.create_event(name='Plain')}")).json()
    assert doc["time_zone"] == "Europe/Berlin" and utc["time_zone"] == "UTC"
    assert doc["onsale_at"].startswith("2030-03-31T01:30:00")  # the API keeps UTC
    assert "Sun 31 Mar 2030, 03:30 CEST" in page          # the sale opens after the change
    assert "The queue opens Sun 31 Mar 2030, 01:30 CET" in page  # and the queue before it
    assert "Fri 5 Apr 2030, 19:30 CEST" in page and "Fri 5 Apr 2030, 19:30 CEST" in home
    assert '<time datetime="2030-03-31T01:30:00' in html
    assert 'data-venue-zone="Europe/Berlin"' in html
    assert '<script type="module" src="/static/js/local_time.js"></script>' in html
    assert wrong.status_code == 400 and wrong.json()["code"] == "invalid_request"
    assert "Europe/Atlantis" in wrong.json()["detail"]
