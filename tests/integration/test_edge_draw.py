"""The published draw's pages against real PostgreSQL and Valkey: each page is its
slice of the draw, any query string is a page, a 400 or a 404 (never a 5xx), a
published page is served from memory (ETag, 304, no database), the route is
throttled per address, and the draws recorded before migration 0006 are chunked
by it and still readable."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import redis.asyncio

from onsale.core.migrate import FUNCTIONS_DIR, MIGRATIONS_DIR, migrate
from onsale.edge.draw import merge_pages, verify_document
from onsale.edge.queries import queries
from onsale.embedded import EmbeddedPostgres, EmbeddedValkey
from onsale.kernel.problems import Problem
from tests.conftest import Api
from tests.integration.edge_support import (
    admitter_for,
    edge_api,
    edge_of,
    join_all,
    keys,
    new_accounts,
    queue_event,
    refresh,
    tick_until,
)

UNLIMITED = {"draw_limit_ip": 10**6}
IMMUTABLE = "public, max-age=31536000, immutable"


def ids(n: int) -> list[str]:
    return sorted(str(uuid.uuid4()) for _ in range(n))


async def random_event(api: Api) -> int:
    return await queue_event(api, queue_policy="random", onsale_at="2999-01-01T00:00:00Z")


async def publish(conn: Any, event_id: int, members: list[str]) -> None:
    """What the admitter's draw writes: the participants, then the seed."""
    assert await conn.fetchval(queries("queue")["record_draw"], event_id, members) is True
    await conn.execute(queries("queue")["reveal_seed"], event_id)


def url(event_id: int, query: str = "") -> str:
    return f"/api/events/{event_id}/queue/draw" + (f"?{query}" if query else "")


# --- a page is its slice ---------------------------------------------------------------------

async def test_a_page_is_exactly_its_slice_of_the_draw(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    members = ids(25_003)
    async with edge_api(db_url, valkey.url, **UNLIMITED) as api:
        event_id = await random_event(api)
        await publish(conn, event_id, members)
        chunks = await conn.fetch("SELECT first_index, cardinality(participants) AS n "
                                  "FROM queue_draw_chunks WHERE event_id = $1 ORDER BY 1",
                                  event_id)
        assert [tuple(r) for r in chunks] == [(1, 10_000), (10_001, 10_000), (20_001, 5_003)]
        async with api.client() as c:
            # pages within a chunk, across chunk boundaries, single ids at the edges
            for page, per_page in [(1, 10_000), (2, 10_000), (3, 10_000), (2, 7_000),
                                   (4, 7_000), (3, 9_999), (10_000, 1), (10_001, 1),
                                   (20_001, 1), (25_003, 1), (1, 1), (2, 10_001 // 2)]:
                r = await c.get(url(event_id, f"page={page}&per_page={per_page}"))
                assert r.status_code == 200, (page, per_page, r.text[:200])
                doc = r.json()
                first = (page - 1) * per_page
                assert doc["participants"] == members[first:first + per_page], (page, per_page)
                assert (doc["page"], doc["per_page"], doc["participant_count"]) == (
                    page, per_page, 25_003)
                pages = -(-25_003 // per_page)
                assert doc["pages"] == pages
                assert doc["next"] == (url(event_id, f"page={page + 1}&per_page={per_page}")
                                       if page < pages else None)
            default = (await c.get(url(event_id))).json()
            assert (default["page"], default["per_page"]) == (1, 10_000)  # the cap
            assert default["participants"] == members[:10_000]
            # following `next` from the first page gives the whole draw, once
            got = [(await c.get(url(event_id, "per_page=3000"))).json()]
            while got[-1]["next"]:
                got.append((await c.get(got[-1]["next"])).json())
        assert len(got) == 9
        merged, problems = merge_pages(got)
        assert problems == [] and merged["participants"] == members
        assert verify_document(merged) == []


# --- hostile query strings -------------------------------------------------------------------

# A published draw of 25: 1 page at the default 10,000, 3 of 10.
PUBLISHED = [
    ("", 200, None), ("page=1", 200, None), ("page=3&per_page=10", 200, None),
    ("page=1&per_page=10000", 200, None), ("page=1&utm=%FF&x", 200, None),
    ("page=2", 404, "draw_page_not_found"), ("page=4&per_page=10", 404, "draw_page_not_found"),
    ("page=2147483647&per_page=1", 404, "draw_page_not_found"),
    ("page=214749&per_page=10000", 404, "draw_page_not_found"),  # clipped at 2^31 - 1
    ("page=30000&per_page=10000", 404, "draw_page_not_found"),
    ("page=214750&per_page=10000", 404, "draw_page_not_found"),  # past any draw
]
REFUSED = [
    "page=30000&per_page=100000",  # the slice that once passed 2^31 inside the database
    "page=2147483648&per_page=1", "page=2147483648",
    "page=9223372036854775807", "page=9223372036854775808", "page=" + "9" * 5000,
    "per_page=" + "9" * 5000, "page=0", "page=-1", "page=%2B1", "page=+1", "page=1%20",
    "page=%201", "page=1.0", "page=1e3", "page=0x1", "page=", "page", "per_page=",
    "per_page=0", "per_page=10001", "per_page=-10", "page=%C2%B2", "page=%D9%A3",
    "page=%EF%BC%91", "per_page=%D9%A3", "page=1%00", "page=%FF", "page=1&page=1",
    "page=1&page=2", "per_page=5&per_page=6", "page=%E2%80%8B1",
]


async def test_every_query_string_is_a_page_a_400_or_a_404_never_a_5xx(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url, **UNLIMITED) as api:
        drawn, pending = await random_event(api), await random_event(api)
        await publish(conn, drawn, ids(25))
        async with api.client() as c:
            for query, status, code in PUBLISHED + [(q, 400, "invalid_request")
                                                    for q in REFUSED]:
                for cold in (True, False):  # a build, then from memory
                    if cold:
                        api.app.state.edge = dataclasses.replace(
                            edge_of(api), draw_pages=type(edge_of(api).draw_pages)())
                    r = await c.get(url(drawn, query))
                    assert r.status_code == status, (query, r.status_code, r.text[:200])
                    if code is not None:
                        assert r.headers["content-type"] == "application/problem+json"
                        assert r.json()["code"] == code, query
                    if code == "draw_page_not_found":
                        assert r.json()["pages"] >= 1
            # before the draw: the same refusals; any valid page is the commitment alone
            for query in REFUSED:
                r = await c.get(url(pending, query))
                assert (r.status_code, r.json()["code"]) == (400, "invalid_request"), query
            for query in ("", "page=2", "page=2147483647&per_page=1"):
                r = await c.get(url(pending, query))
                assert r.status_code == 200 and r.json()["participants"] is None, query
            for path in ("/api/events/999999999/queue/draw", "/api/events/%D9%A3/queue/draw",
                         "/api/events/0/queue/draw"):
                r = await c.get(path)
                assert (r.status_code, r.json()["code"]) == (404, "event_not_found"), path


# --- ETag, 304, published once ---------------------------------------------------------------

async def test_a_published_page_is_immutable_with_a_strong_etag(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    members = ids(30)
    async with edge_api(db_url, valkey.url, **UNLIMITED) as api:
        event_id = await random_event(api)
        async with api.client() as c:
            before = await c.get(url(event_id))
            assert before.status_code == 200 and before.headers["cache-control"] == "no-store"
            assert "etag" not in before.headers
            assert before.json()["seed"] is None and before.json()["participants"] is None
            await publish(conn, event_id, members)
            after = await c.get(url(event_id))  # the answer before the draw was not kept
            assert after.json()["participants"] == members and after.json()["seed"]
            etag = after.headers["etag"]
            assert after.headers["cache-control"] == IMMUTABLE
            assert etag.startswith('"') and not etag.startswith("W/")
            for sent in (etag, f"W/{etag}", f'"nope", {etag}', "*"):
                r = await c.get(url(event_id), headers={"If-None-Match": sent})
                assert r.status_code == 304 and r.content == b"", sent
                assert (r.headers["etag"], r.headers["cache-control"]) == (etag, IMMUTABLE)
            other = await c.get(url(event_id), headers={"If-None-Match": '"nope"'})
            assert other.status_code == 200 and other.content == after.content
            second = await c.get(url(event_id, "per_page=10"))
            assert second.headers["etag"] != etag  # another page, another validator
        # Another edge process (cold) builds the same bytes, so the same validator.
        async with edge_api(db_url, valkey.url, **UNLIMITED) as other_process:
            async with other_process.client() as c:
                r = await c.get(url(event_id), headers={"If-None-Match": etag})
                assert r.status_code == 304
                fresh = await c.get(url(event_id))
                assert fresh.content == after.content and fresh.headers["etag"] == etag


# --- from memory, without the database -------------------------------------------------------

class CountingDatabase:
    """The edge's database, counting the connections taken; ``cut`` refuses them."""

    def __init__(self, db: Any) -> None:
        self.db, self.taken, self.cut = db, 0, False

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        self.taken += 1
        if self.cut:
            raise Problem(503, "inventory_unavailable", detail="cut by the test")
        async with self.db.connection() as conn:
            yield conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


async def test_a_page_seen_once_is_served_from_memory_without_the_database(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    async with edge_api(db_url, valkey.url, **UNLIMITED) as api:
        event_id = await random_event(api)
        await publish(conn, event_id, ids(50))  # 5 pages of 10
        edge = edge_of(api)
        db = CountingDatabase(edge.db)
        monkeypatch.setattr(api.app.state, "edge", dataclasses.replace(edge, db=db))
        async with api.client() as c:
            first = await c.get(url(event_id, "page=1&per_page=10"))
            assert first.status_code == 200 and db.taken == 1
            cached = edge.draw_pages.get((event_id, 1, 10))
            assert cached is not None and cached.body == first.content
            db.cut = True
            again = await c.get(url(event_id, "page=1&per_page=10"))
            assert again.status_code == 200 and again.content == first.content
            assert edge.draw_pages.get((event_id, 1, 10)) is cached  # the same bytes object
            unchanged = await c.get(url(event_id, "page=1&per_page=10"),
                                    headers={"If-None-Match": first.headers["etag"]})
            assert unchanged.status_code == 304
            past = await c.get(url(event_id, "page=6&per_page=10"))
            assert (past.status_code, past.json()["code"], past.json()["pages"]) == (
                404, "draw_page_not_found", 5)
            past_other_size = await c.get(url(event_id, "page=3&per_page=25"))
            assert past_other_size.json()["code"] == "draw_page_not_found"
            assert db.taken == 1  # none of these touched the database
            # It is cut: a page never built needs it (so the above really were from memory).
            cold = await c.get(url(event_id, "page=2&per_page=10"))
            assert (cold.status_code, cold.json()["code"]) == (503, "inventory_unavailable")
            assert db.taken == 2
            db.cut = False
            assert (await c.get(url(event_id, "page=2&per_page=10"))).status_code == 200


# --- the throttle ----------------------------------------------------------------------------

async def test_the_draw_is_throttled_per_client_address(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url, draw_limit_ip=1) as api:  # bursts of 5
        event_id = await random_event(api)
        await publish(conn, event_id, ids(3))
        async with api.client() as c:
            answers = [await c.get(url(event_id)) for _ in range(5)]
            assert {r.status_code for r in answers} == {200}
            etag = answers[0].headers["etag"]
            refused = await c.get(url(event_id), headers={"If-None-Match": etag})
            assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"
            assert int(refused.headers["retry-after"]) >= 1
            assert (await c.get(url(event_id, "page=0"))).status_code == 429  # before parsing
        elsewhere = httpx.ASGITransport(app=api.app, client=("192.0.2.7", 4000))
        async with httpx.AsyncClient(transport=elsewhere, base_url="http://test") as c:
            assert (await c.get(url(event_id))).status_code == 200


# --- recorded once ---------------------------------------------------------------------------

async def test_a_draw_is_recorded_once_and_a_waiting_second_record_reads_the_first(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    first, second = ids(12_345), ids(7)
    async with edge_api(db_url, valkey.url, **UNLIMITED) as api:
        event_id = await random_event(api)
    other = await asyncpg.connect(db_url)
    try:
        tx = conn.transaction()
        await tx.start()
        assert await conn.fetchval(queries("queue")["record_draw"], event_id, first) is True
        late = asyncio.ensure_future(
            other.fetchval(queries("queue")["record_draw"], event_id, second))
        pid = other.get_server_pid()
        deadline = time.monotonic() + 30
        while not await conn.fetchval(  # the second waits on the first's row
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid):
            assert time.monotonic() < deadline, "the second record never waited"
            await asyncio.sleep(0.01)
        await tx.commit()
        assert await late is False
        recorded = await other.fetchval(queries("queue")["recorded_draw"], event_id)
        assert [str(p) for p in recorded] == first
        assert await conn.fetchval("SELECT participant_count FROM queue_draws "
                                   "WHERE event_id = $1", event_id) == 12_345
        assert await conn.fetchval("SELECT sum(cardinality(participants)) FROM "
                                   "queue_draw_chunks WHERE event_id = $1", event_id) == 12_345
    finally:
        await other.close()


async def test_an_admitter_repeating_a_draw_publishes_the_first_record(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    """A crash after the participants were recorded: the next draw finds them and
    uses them, whatever the pre-queue holds now."""
    async with edge_api(db_url, valkey.url, **UNLIMITED) as api:
        event_id = await random_event(api)
        arrivals = await join_all(api, await new_accounts(conn, 12), event_id,
                                  concurrently=False)
        recorded = sorted(str(v.account) for v in arrivals)[:11]  # one fewer: noticeable
        assert await conn.fetchval(queries("queue")["record_draw"], event_id,
                                   recorded) is True
        await conn.execute("UPDATE events SET onsale_at = now() WHERE event_id = $1", event_id)
        admitter = admitter_for(api, targets=None)
        await refresh(api)

        async def drawn() -> bool:
            return bool(await redis_client.hget(keys(event_id).status, "draw") == b"drawn")
        await tick_until(admitter, drawn)
        async with api.client() as c:
            doc = (await c.get(url(event_id))).json()
        assert doc["participants"] == recorded and doc["participant_count"] == 11
        assert verify_document(doc) == []


# --- draws from before 0006 ------------------------------------------------------------------

async def test_a_draw_recorded_by_the_previous_build_is_still_read(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    """During a rolling deploy an edge of the build before 0006 may draw: it writes
    the participants array alone. The new code reads such a row from the array."""
    members = ids(2_500)
    async with edge_api(db_url, valkey.url, **UNLIMITED) as api:
        event_id = await random_event(api)
        await conn.execute("INSERT INTO queue_draws (event_id, participants) VALUES ($1, $2)",
                           event_id, members)  # the previous build's record_draw
        await conn.execute(queries("queue")["reveal_seed"], event_id)
        assert await conn.fetchval(queries("queue")["record_draw"], event_id, ids(3)) is False
        recorded = await conn.fetchval(queries("queue")["recorded_draw"], event_id)
        assert [str(p) for p in recorded] == members
        async with api.client() as c:
            for page, per_page in [(1, 1000), (3, 1000), (2, 2499), (2_500, 1)]:
                doc = (await c.get(url(event_id, f"page={page}&per_page={per_page}"))).json()
                first = (page - 1) * per_page
                assert doc["participants"] == members[first:first + per_page]
                assert doc["participant_count"] == 2_500
            past = await c.get(url(event_id, "page=4&per_page=1000"))
            assert past.json()["code"] == "draw_page_not_found"


async def test_the_migration_chunks_the_draws_recorded_before_it(
        pg: EmbeddedPostgres, tmp_path: Path) -> None:
    migrations, functions = tmp_path / "migrations", tmp_path / "functions"
    shutil.copytree(MIGRATIONS_DIR, migrations)
    shutil.copytree(FUNCTIONS_DIR, functions)
    later = tmp_path / "later"
    later.mkdir()
    for path in sorted(migrations.glob("*.sql")):
        if path.name >= "0006":
            path.rename(later / path.name)
    assert (later / "0006_draw_chunks.sql").exists()
    admin = await asyncpg.connect(pg.url)
    try:
        await admin.execute("DROP DATABASE IF EXISTS draw_chunking")
        await admin.execute("CREATE DATABASE draw_chunking")
    finally:
        await admin.close()
    draws = {1: ids(25_003), 2: ids(10_000), 3: ids(10_001), 4: ids(1), 5: []}
    conn = await asyncpg.connect(pg.url_for("draw_chunking"))
    try:
        await migrate(conn, migrations, functions)
        await conn.execute("SET session_replication_role = replica")  # rows alone, no events
        for event_id, members in draws.items():
            await conn.execute("INSERT INTO queue_draws (event_id, participants) "
                               "VALUES ($1, $2)", event_id, members)
        await conn.execute("RESET session_replication_role")
        for path in sorted(later.glob("*.sql")):
            path.rename(migrations / path.name)
        applied = await migrate(conn, migrations, functions)
        assert 6 in applied.migrations
        for event_id, members in draws.items():
            count = await conn.fetchval(
                "SELECT participant_count FROM queue_draws WHERE event_id = $1", event_id)
            assert count == len(members)
            chunks = await conn.fetch("SELECT first_index, participants FROM queue_draw_chunks "
                                      "WHERE event_id = $1 ORDER BY first_index", event_id)
            assert [r["first_index"] for r in chunks] == list(range(1, len(members) + 1,
                                                                    10_000))
            assert [str(p) for r in chunks for p in r["participants"]] == members
            recorded = await conn.fetchval(queries("queue")["recorded_draw"], event_id)
            assert [str(p) for p in recorded] == members
    finally:
        await conn.close()
