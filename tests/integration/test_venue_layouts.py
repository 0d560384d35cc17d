"""The venue layout (issue 21): served from the process's cache, read from PostgreSQL one
representation at a time on a pool of its own, once for any number of concurrent
misses, at an immutable content-addressed URL that the event document links to; a
conditional request for a known layout touches no database; and a flood of layout reads
leaves holds unaffected (a real ``onsale serve --role core`` with a small request pool)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from onsale.core.venues import LAYOUT_POOL_MAX, Layout, VenueLayouts
from onsale.embedded import EmbeddedPostgres, EmbeddedValkey
from tests.conftest import Api, audit_clean, fresh_database, hold
from tests.stack import Stack, connected, eventually

IMMUTABLE = "public, max-age=31536000, immutable"


class Recorded:
    """A pool that records every statement run on its connections and what came back;
    with ``gate``, each statement waits for it first."""

    def __init__(self, pool: Any, gate: asyncio.Event | None = None) -> None:
        self.pool = pool
        self.gate = gate
        self.statements: list[str] = []
        self.rows: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    def acquire(self, timeout: float | None = None) -> contextlib.AbstractAsyncContextManager[Any]:
        return self._recorded(self.pool.acquire(timeout=timeout))

    @contextlib.asynccontextmanager
    async def _recorded(self, acquiring: Any) -> AsyncIterator[Any]:
        async with acquiring as conn:
            yield _RecordedConnection(self, conn)


class _RecordedConnection:
    def __init__(self, recorded: Recorded, conn: Any) -> None:
        self.recorded, self.conn = recorded, conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        self.recorded.statements.append(sql)
        if self.recorded.gate is not None:
            await self.recorded.gate.wait()
        row = await self.conn.fetchrow(sql, *args)
        if row is not None:
            self.recorded.rows.append(dict(row))
        return row


def venues_of(api: Api) -> VenueLayouts:
    venues: VenueLayouts | None = api.app.state.core.venues
    assert venues is not None
    return venues


@contextlib.contextmanager
def recording(api: Api, gate: asyncio.Event | None = None) -> Any:
    venues = venues_of(api)
    real = venues.db.pool
    recorded = Recorded(real, gate)
    venues.db.pool = recorded
    try:
        yield recorded
    finally:
        venues.db.pool = real


async def layout_hash(conn: Any, event_id: int) -> str:
    found: str = await conn.fetchval("SELECT etag FROM venue_layouts WHERE event_id = $1",
                                     event_id)
    return found


GZIP = {"Accept-Encoding": "gzip"}
PLAIN = {"Accept-Encoding": "identity"}


async def test_the_event_links_its_layout_at_an_immutable_content_addressed_url(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=321)
    digest = await layout_hash(conn, event_id)
    url = f"/api/events/{event_id}/venue/{digest}"
    async with api.client() as c:
        doc = (await c.get(f"/api/events/{event_id}")).json()
        listed = (await c.get("/api/events")).json()["events"]
        zipped = await c.get(url, headers=GZIP)
        plain = await c.get(url, headers=PLAIN)
        old_zipped = await c.get(f"/api/events/{event_id}/venue", headers=GZIP)
        old_plain = await c.get(f"/api/events/{event_id}/venue", headers=PLAIN)
        again = await c.get(url, headers={**GZIP, "If-None-Match": f'"{digest}-gzip"'})
        stale = await c.get(url, headers={**GZIP, "If-None-Match": f'"{digest}"'})
    assert doc["links"]["venue"] == url and listed[0]["links"]["venue"] == url
    for response, tag in ((zipped, f'"{digest}-gzip"'), (plain, f'"{digest}"')):
        assert response.status_code == 200
        assert response.headers["cache-control"] == IMMUTABLE
        assert response.headers["etag"] == tag  # strong: no W/
        assert response.headers["vary"] == "Accept-Encoding"
        assert response.headers["content-type"] == "application/json"
    assert zipped.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in plain.headers
    stored = await conn.fetchrow("SELECT body, body_gzip FROM venue_layouts WHERE event_id = $1",
                                 event_id)
    assert plain.content == stored["body"].encode()
    assert gzip.decompress(stored["body_gzip"]) == plain.content
    assert json.loads(zipped.content) == json.loads(plain.content)  # httpx decodes gzip
    assert json.loads(plain.content)["seat_count"] == 321
    # The old URL: the same bytes and validators, for older clients.
    assert old_plain.status_code == old_zipped.status_code == 200
    assert old_plain.content == plain.content and old_zipped.content == zipped.content
    assert old_plain.headers["etag"] == plain.headers["etag"]
    assert old_zipped.headers["etag"] == zipped.headers["etag"]
    assert old_zipped.headers["cache-control"] == IMMUTABLE
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == f'"{digest}-gzip"'
    assert again.headers["cache-control"] == IMMUTABLE
    assert stale.status_code == 200  # the other representation's validator


async def test_the_seat_page_fetches_the_layout_through_its_link(api: Api, conn: Any) -> None:
    from onsale.web import seat_pages
    from tests.integration.test_web_seat_pages import page_data, pages

    pages(api)
    event_id = await api.create_event(seats=30)
    digest = await layout_hash(conn, event_id)
    async with api.client(await api.account(conn)) as c:
        page = await c.get(f"/events/{event_id}/seats")
        link = page_data(page.text, "seat-page-data")["event"]["links"]["venue"]
        layout = await c.get(link, headers=GZIP)
    assert link == f"/api/events/{event_id}/venue/{digest}"
    assert layout.status_code == 200 and layout.headers["cache-control"] == IMMUTABLE
    script = Path(seat_pages.__file__).parent / "static" / "js" / "seatmap.js"
    assert "api(venueUrl)" in script.read_text() and "EVENT.links.venue" in script.read_text()


async def test_a_conditional_request_for_a_known_layout_touches_no_database(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=50)
    digest = await layout_hash(conn, event_id)
    url = f"/api/events/{event_id}/venue/{digest}"
    async with api.client() as c:
        first = await c.get(url, headers=GZIP)  # learns the event's hash
        assert first.status_code == 200
        # No database any more: both of this process's pools are closed.
        await venues_of(api).db.pool.close()
        await api.app.state.core.db.pool.close()
        answers = [
            await c.get(url, headers={**GZIP, "If-None-Match": f'"{digest}-gzip"'}),
            await c.get(f"/api/events/{event_id}/venue",
                        headers={**GZIP, "If-None-Match": f'"{digest}-gzip"'}),
            # The plain JSON was never read: its tag is known from the hash alone.
            await c.get(url, headers={**PLAIN, "If-None-Match": f'"{digest}"'}),
            await c.get(f"/api/events/{event_id}/venue",
                        headers={**PLAIN, "If-None-Match": f'W/"other", "{digest}"'}),
            await c.get(url, headers={**PLAIN, "If-None-Match": "*"}),
        ]
        cached = await c.get(url, headers=GZIP)  # the bytes are kept
        wrong = await c.get(f"/api/events/{event_id}/venue/{'0' * 32}", headers=GZIP)
        unread = await c.get(url, headers=PLAIN)  # would need the database
    assert [a.status_code for a in answers] == [304] * 5
    assert all(a.content == b"" and a.headers["cache-control"] == IMMUTABLE for a in answers)
    assert cached.status_code == 200 and cached.content == first.content
    assert wrong.status_code == 404 and wrong.json()["code"] == "venue_not_found"
    # The check works: the database really is out of reach.
    assert unread.status_code == 503 and unread.json()["code"] == "inventory_unavailable"


async def test_a_miss_reads_only_the_representation_it_sends_on_the_layout_pool(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=500)
    digest = await layout_hash(conn, event_id)
    sizes = await conn.fetchrow(
        "SELECT octet_length(body) AS plain, octet_length(body_gzip) AS packed "
        "FROM venue_layouts WHERE event_id = $1", event_id)
    venues_of(api).cache.clear()
    with recording(api) as recorded:
        async with api.client() as c:
            zipped = await c.get(f"/api/events/{event_id}/venue", headers=GZIP)
            assert len(recorded.rows) == 1
            plain = await c.get(f"/api/events/{event_id}/venue/{digest}", headers=PLAIN)
            again = [await c.get(f"/api/events/{event_id}/venue/{digest}", headers=h)
                     for h in (GZIP, PLAIN, GZIP, PLAIN)]
    assert zipped.status_code == plain.status_code == 200
    assert [a.status_code for a in again] == [200] * 4
    # Two reads in all, each of two columns: the hash and the one representation sent.
    assert len(recorded.statements) == len(recorded.rows) == 2
    packed, text = recorded.rows
    assert sorted(packed) == sorted(text) == ["body", "etag"]
    assert packed["etag"] == text["etag"] == digest
    assert isinstance(packed["body"], bytes) and len(packed["body"]) == sizes["packed"]
    assert isinstance(text["body"], str) and len(text["body"].encode()) == sizes["plain"]
    assert sizes["plain"] > 3 * sizes["packed"]  # a plain read is not a gzip read
    assert venues_of(api).db.pool is not api.app.state.core.db.pool
    assert venues_of(api).db.pool.get_max_size() == LAYOUT_POOL_MAX


async def test_concurrent_cold_misses_share_one_read(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=300)
    digest = await layout_hash(conn, event_id)
    venues = venues_of(api)
    venues.cache.clear()
    entered = 0
    real_layout = venues.layout

    async def counting(event: int, gzipped: bool) -> Layout | None:
        nonlocal entered
        entered += 1
        return await real_layout(event, gzipped)

    gate = asyncio.Event()
    venues.layout = counting  # type: ignore[method-assign]
    try:
        with recording(api, gate) as recorded:
            async with api.client() as c:
                urls = [f"/api/events/{event_id}/venue", f"/api/events/{event_id}/venue/{digest}"]
                flood = [asyncio.ensure_future(c.get(urls[i % 2], headers=GZIP))
                         for i in range(60)]
                await eventually(lambda: _true(entered == 60))  # every one is waiting
                gate.set()
                answers = await asyncio.gather(*flood)
    finally:
        del venues.layout
    assert [a.status_code for a in answers] == [200] * 60
    assert len({a.content for a in answers}) == 1
    assert len(recorded.statements) == 1


async def _true(value: bool) -> bool:
    return value


BAD_HASHES = [
    "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcde",
    "0123456789abcdef0123456789abcdef0", "0123456789abcdef0123456789abcdeg",
    "%EF%BC%90123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef%0A",
    "0123456789abcdef0123456789abcdef-gzip", "%22abc%22", "x", "...",
]


async def test_a_malformed_hash_is_404_without_a_query_and_an_unknown_one_is_404(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20)
    digest = await layout_hash(conn, event_id)
    venues_of(api).cache.clear()
    with recording(api) as recorded:
        async with api.client() as c:
            malformed = [await c.get(f"/api/events/{event_id}/venue/{bad}") for bad in BAD_HASHES]
            malformed += [await c.get(f"/api/events/{raw}/venue/{digest}")
                          for raw in ("abc", "0", "-1", "٣", "99999999999999999999")]
            assert recorded.statements == []  # not one query for what cannot be a hash
            other = "0" * 31 + "1"
            unknown = [await c.get(f"/api/events/{event_id}/venue/{other}"),
                       await c.get(f"/api/events/{event_id}/venue/{other}",
                                   headers={"If-None-Match": "*"}),
                       await c.get(f"/api/events/{event_id}/venue/{'f' * 32}"),
                       await c.get(f"/api/events/{event_id + 1000}/venue/{digest}")]
            right = await c.get(f"/api/events/{event_id}/venue/{digest}")
    for response in malformed + unknown:
        assert response.status_code == 404, (response.url, response.status_code)
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "venue_not_found"
    assert right.status_code == 200
    # The event's hash was read once (then known); the unknown event once.
    assert len(recorded.statements) == 2
    old = [await _get(api, f"/api/events/{event_id + 1000}/venue"),
           await _get(api, "/api/events/abc/venue")]
    assert [(r.status_code, r.json()["code"]) for r in old] == [(404, "event_not_found")] * 2


async def _get(api: Api, path: str) -> httpx.Response:
    async with api.client() as c:
        return await c.get(path)


# --- a flood of layout reads against a real core process --------------------------------------

ACQUIRE_S = "2"


@pytest.fixture
async def small_core(pg: EmbeddedPostgres, template_db: str, valkey: EmbeddedValkey,
                     redis_client: Any, tmp_path: Path) -> AsyncIterator[Stack]:
    """``onsale serve --role core`` (and an edge for admissions) with a request pool of 3
    connections, waiting at most 2 s for one; statements may run 10 s."""
    stack = Stack(await fresh_database(pg, template_db), tmp_path, redis_url=valkey.url)
    try:
        stack.start_core(ONSALE_DB_POOL_MIN="1", ONSALE_DB_POOL_MAX="3",
                         ONSALE_DB_ACQUIRE_TIMEOUT=ACQUIRE_S,
                         ONSALE_DB_REQUEST_TIMEOUT_MS="10000")
        yield stack
    finally:
        stack.stop()


async def admin_event(stack: Stack, seats: int) -> dict[str, Any]:
    from tests.conftest import ADMIN_TOKEN

    async with stack.client() as c:
        r = await c.post("/api/ops/events", json={"name": f"Flood {uuid.uuid4().hex[:6]}",
                                                  "seats": seats,
                                                  "queue_policy": "passthrough"},
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 201, r.text
    doc: dict[str, Any] = r.json()
    return doc


WAITING_ON_LAYOUTS = """
SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE NOT l.granted AND l.relation = 'venue_layouts'::regclass AND a.datname = current_database()
"""


async def test_a_flood_of_layout_reads_leaves_holds_unaffected(small_core: Stack) -> None:
    """Every layout read is stuck behind a lock on venue_layouts (the worst a flood of
    reads can do: hold their connections for as long as the database takes), and more
    are waiting; holds placed meanwhile all land. Were the layouts read on the request
    pool, its three connections would be stuck and every hold would be refused with
    503 after its 2 s wait for one."""
    stack = small_core
    events = [await admin_event(stack, 3000) for _ in range(3)]
    sale = events[0]["event_id"]
    async with connected(stack) as conn:
        accounts = [await _account(conn) for _ in range(12)]
        for account in accounts:  # admitted before the flood (the edge's work, not ours)
            assert await stack.admissions.token(account, sale) is not None
        locker = await asyncpg.connect(stack.db_url)
        async with httpx.AsyncClient(base_url=stack.core_url, timeout=60) as reader:
            lock = locker.transaction()
            await lock.start()
            await locker.execute("LOCK TABLE venue_layouts IN ACCESS EXCLUSIVE MODE")
            try:
                urls = [u for e in events
                        for u in (e["links"]["venue"], f"/api/events/{e['event_id']}/venue")]
                flood = [asyncio.ensure_future(reader.get(
                    urls[i % len(urls)], headers=GZIP if i % 3 else PLAIN)) for i in range(90)]

                async def a_read_is_stuck() -> bool:
                    return bool(await conn.fetch(WAITING_ON_LAYOUTS))

                await eventually(a_read_is_stuck)
                holds = await _place_holds(stack, accounts, sale)
                stuck = [r["application_name"] for r in await conn.fetch(WAITING_ON_LAYOUTS)]
            finally:
                await lock.rollback()
                await locker.close()
            layouts = await asyncio.gather(*flood)
        assert [h.status_code for h in holds] == [201] * len(holds), [h.text for h in holds]
        # Only the layout pool's connections ever waited on the layouts.
        assert stuck and set(stuck) == {"onsale-core-venue"}
        assert len(stuck) <= LAYOUT_POOL_MAX
        # A layout read is answered, or refused on its own pool (never with a hold's).
        for r in layouts:
            assert r.status_code in (200, 503), r.status_code
            if r.status_code == 503:
                assert r.json()["code"] == "inventory_unavailable"
            else:
                assert r.json()["seat_count"] == 3000
        assert any(r.status_code == 200 for r in layouts)
        async with httpx.AsyncClient(base_url=stack.core_url, timeout=60) as reader:
            again = await asyncio.gather(*(reader.get(u, headers=GZIP) for u in urls * 5))
        assert [r.status_code for r in again] == [200] * len(again)
        await audit_clean(conn)


async def _account(conn: Any) -> uuid.UUID:
    account_id: uuid.UUID = await conn.fetchval(
        "INSERT INTO accounts (email, password_hash) VALUES ($1, 'x') RETURNING account_id",
        f"u{uuid.uuid4().hex[:12]}@example.com")
    return account_id


async def _place_holds(stack: Stack, accounts: list[uuid.UUID],
                       event_id: int) -> list[httpx.Response]:
    async def one(i: int, account: uuid.UUID) -> httpx.Response:
        async with stack.client(account) as c:
            return await hold(c, event_id, [i + 1])

    calls: list[Awaitable[httpx.Response]] = [one(i, a) for i, a in enumerate(accounts)]
    return list(await asyncio.gather(*calls))

