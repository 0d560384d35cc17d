"""The shopper pages rendered without servers: a stand-in database answers
the events query with literal rows (web/shop_pages.py, templates/shop/)."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import httpx
from starlette.applications import Starlette

from onsale.kernel.config import Settings
from onsale.kernel.cookies import cookie_policy
from onsale.kernel.db import Database
from onsale.kernel.placement import Placement, ShardRow
from onsale.kernel.problems import Problem
from onsale.kernel.sessions import COOKIE, SessionCodec, SessionRef, Sessions, new_session_id
from onsale.kernel.shards import ShardSet
from onsale.kernel.shared import Shared
from onsale.web import shop_pages
from tests.sessions_support import MemorySessionStore

SECRET = "unit-secret-key-0123456789abcdef"
NOW = datetime.now(UTC)


def row(event_id: int = 7, **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": event_id, "name": "Gala <night>", "venue_name": "Main Arena",
        "time_zone": "UTC",
        "starts_at": NOW + timedelta(days=30), "onsale_at": NOW - timedelta(minutes=5),
        "currency": "USD", "seat_count": 300, "hold_ttl_seconds": 300,
        "max_tickets_per_account": 6, "max_seats_per_hold": 6,
        "tiers": [{"tier_id": 1, "name": "Premium", "price_minor": 15000},
                  {"tier_id": 2, "name": "Value", "price_minor": 4550}],
        "queue_policy": "fifo", "prequeue_at": None, "pow_difficulty": 0,
        "draw_commitment": None, "draw_seed": None, "drawn_at": None,
        "beacon_commitment": None, "beacon_outcome": None,
    }
    base.update(over)
    return base


class FakeDb:
    """Answers ``queries("events")["events"]`` (all events, or those listed) with the rows
    given."""

    def __init__(self, rows: list[dict[str, Any]], down: bool = False) -> None:
        self.rows, self.down = rows, down

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        if self.down:
            raise Problem(503, "inventory_unavailable")
        yield self

    async def fetch(self, sql: str, event_ids: list[int] | None) -> list[dict[str, Any]]:
        return [r for r in self.rows if event_ids is None or r["event_id"] in event_ids]

    async def fetchrow(self, sql: str, event_ids: list[int]) -> dict[str, Any] | None:
        return next(iter(await self.fetch(sql, event_ids)), None)

    async def fetchval(self, sql: str) -> datetime:
        assert sql == "SELECT now()"
        return NOW


def client(rows: list[dict[str, Any]], *, account: uuid.UUID | None = None,
           down: bool = False, cookies: dict[str, str] | None = None) -> httpx.AsyncClient:
    app = Starlette(routes=shop_pages.routes)
    store = MemorySessionStore()
    sessions = Sessions(SessionCodec(SECRET, 3600), cookie_policy("http://127.0.0.1:8000"),
                        store)
    settings = Settings(database_url="postgresql://unused", redis_url=None,
                        secret_key=SECRET, admin_token="unit-admin-token")
    db = cast(Database, FakeDb(rows, down))
    shards = ShardSet(db, Placement({1: ShardRow(1, "")}), {1: db})  # one shard
    app.state.shared = Shared(settings, db, None, sessions, shards=shards)
    jar = dict(cookies or {})
    if account is not None:  # a live session, as signing in makes one
        session_id = new_session_id()
        store.records[account] = {session_id}
        jar[COOKIE] = sessions.codec.encode(SessionRef(account, session_id))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t",
                             cookies=jar)


def text(html: str) -> str:
    """The visible words of a page, whitespace collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


async def test_event_list_links_every_event_with_its_policy_in_words() -> None:
    rows = [row(1), row(2, name="Late show", queue_policy="random",
                        onsale_at=NOW + timedelta(hours=2), draw_commitment="ab" * 32)]
    async with client(rows) as c:
        page = await c.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'href="/events/1"' in page.text and 'href="/events/2"' in page.text
    assert "Gala &lt;night&gt;" in page.text and "<night>" not in page.text  # escaped
    words = text(page.text)
    assert "first come, first served" in words and "On sale now" in words
    assert "random draw at" in words and "for everyone who arrives before" in words
    async with client([]) as c:
        assert "no events on sale yet" in (await c.get("/")).text


async def test_event_page_shows_facts_prices_and_a_join_button() -> None:
    onsale = NOW + timedelta(hours=1)
    rows = [row(7, onsale_at=onsale, queue_policy="random", draw_commitment="c0ffee" * 10)]
    async with client(rows, account=uuid.uuid4()) as c:
        page = await c.get("/events/7")
    words = text(page.text)
    assert page.status_code == 200
    assert "Main Arena" in words and "150.00 USD" in words and "45.50 USD" in words
    assert f"random draw at {onsale:%H:%M} UTC for everyone who arrives before" in words
    assert f"{onsale.day} {onsale:%b %Y}, {onsale:%H:%M} UTC" in words  # on-sale time
    assert "c0ffee" * 10 in page.text  # the draw's commitment
    assert re.search(r'<a id="join-queue"[^>]*href="/events/7/queue"', page.text)
    assert "Join the queue" in words


async def test_signed_out_join_goes_through_sign_in_and_comes_back() -> None:
    async with client([row(7, queue_policy="passthrough")]) as c:
        page = await c.get("/events/7")
        room = await c.get("/events/7/queue")
    assert re.search(r'<a id="join-queue"[^>]*href="/signin\?next=/events/7/queue"', page.text)
    assert "no queue: straight in" in text(page.text)
    assert room.status_code == 303 and room.headers["location"] == "/signin?next=/events/7/queue"


async def test_unknown_or_malformed_event_is_a_404_page_with_a_sentence() -> None:
    async with client([row(7)], account=uuid.uuid4()) as c:
        for path in ("/events/8", "/events/abc", "/events/99999999999999999999999",
                     "/events/8/queue", "/events/-1/queue"):
            page = await c.get(path)
            assert page.status_code == 404, path
            assert "We could not find this event." in page.text, path
        missing = await c.get("/events/8")
    assert missing.status_code == 404 and "text/html" in missing.headers["content-type"]
    assert "We could not find this event." in missing.text
    assert '"code"' not in missing.text and "Traceback" not in missing.text


async def test_database_down_is_a_sentence_not_json() -> None:
    async with client([row(7)], down=True) as c:
        listing = await c.get("/")
        one = await c.get("/events/7")
    for page in (listing, one):
        assert page.status_code == 503
        assert "Reservations are temporarily unavailable" in page.text
        assert "application/problem+json" not in page.headers["content-type"]


async def test_waiting_room_carries_what_its_script_needs() -> None:
    account = uuid.uuid4()
    rows = [row(7, queue_policy="random", draw_commitment="ab" * 32, draw_seed="cd" * 32)]
    async with client(rows, account=account) as c:
        fresh = await c.get("/events/7/queue")
    async with client(rows, account=account, cookies={"onsale_queue_7": "ticket"}) as c:
        back = await c.get("/events/7/queue")
    assert fresh.status_code == 200
    section = re.search(r'<section id="waiting-room"[^>]*>', fresh.text)
    assert section is not None
    tag = section.group(0)
    assert 'data-state="joining"' in tag and 'data-event-id="7"' in tag
    assert 'data-joined="false"' in tag and 'data-seats-url="/events/7/seats"' in tag
    assert 'data-joined="true"' in back.text
    assert "ab" * 32 in fresh.text and "cd" * 32 in fresh.text  # commitment and seed
    assert '/static/js/queue.js' in fresh.text


async def test_forms_have_labels_the_contract_ids_and_a_safe_next() -> None:
    async with client([]) as c:
        signin = await c.get("/signin", params={"next": "/events/7/queue"})
        signup = await c.get("/signup", params={"next": "https://evil.example/"})
    assert 'id="signin-submit"' in signin.text and 'id="signup-submit"' in signup.text
    for page in (signin, signup):
        assert 'name="email"' in page.text and 'name="password"' in page.text
        assert '<label for="email">' in page.text and '<label for="password">' in page.text
        assert '/static/js/account.js' in page.text
    assert 'data-next="/events/7/queue"' in signin.text
    assert 'data-next="/"' in signup.text and "evil.example" not in signup.text


async def test_sign_out_clears_the_session_cookie_and_goes_home() -> None:
    async with client([], account=uuid.uuid4()) as c:
        home = await c.get("/")
        assert "Sign out" in home.text
        copied = c.cookies[COOKIE]
        out = await c.post("/signout")
        assert out.status_code == 303 and out.headers["location"] == "/"
        cookie = out.headers["set-cookie"]
        assert cookie.startswith(f'{COOKIE}=""') and "Max-Age=0" in cookie
        c.cookies.clear()  # what the browser does with Max-Age=0 (e2e/test_accounts.py)
        after = await c.get("/")
        assert "Sign out" not in after.text and 'href="/signin"' in after.text
        # The session itself ended: a copy of the cookie taken before is signed out too.
        replayed = await c.get("/", headers={"Cookie": f"{COOKIE}={copied}"})
        assert "Sign out" not in replayed.text and 'href="/signin"' in replayed.text
        assert (await c.get("/signout")).status_code == 405
