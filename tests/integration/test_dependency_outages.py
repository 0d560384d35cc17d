"""Dependencies fail fast (docs/security.md#dependencies-fail-fast): a real Valkey and a
real PostgreSQL stopped with SIGSTOP mid-sale (they accept connections and never
answer, the worst kind of outage) turn into the documented 503s well before a
client's 5 s timeout, with the production bounds; the log says once that the
dependency went away and once that it came back; after SIGCONT the same
requests succeed, a retried hold exactly once, and the audit is clean.

No timed assertions: a request that hangs fails the test by hitting the client's
timeout (httpx raises), the condition loops have generous deadlines."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import redis.asyncio

from onsale.compose import build_app
from onsale.core.migrate import migrate
from onsale.embedded import EmbeddedPostgres, EmbeddedValkey, start_postgres, start_valkey
from tests.conftest import Api, asyncpg_connect, audit_clean, build_api_app, make_settings
from tests.integration.edge_support import Visitor, new_accounts
from tests.seatmap_support import seatmap_settings
from tests.stack import eventually

CLIENT_TIMEOUT = 5.0  # a request past this is a hang: httpx raises and the test fails
# The production bounds (tests/conftest.py's make_settings loosens them for the rest).
FAIL_FAST = dict(db_acquire_timeout=0.5, db_request_timeout_ms=500, redis_timeout=0.25,
                 redis_pool_wait=0.5)


@contextlib.contextmanager
def stopped(pids: list[int]) -> Iterator[None]:
    """SIGSTOP the processes for the block; SIGCONT whatever happens."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def cluster_pids(pg: EmbeddedPostgres) -> list[int]:
    """The postmaster and every backend and helper it forked (its children)."""
    postmaster = int((pg.data_dir / "postmaster.pid").read_text().splitlines()[0])
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == postmaster:
                    children.append(int(entry.name))
    return [postmaster, *children]


def dependency_lines(caplog: pytest.LogCaptureFixture, name: str, what: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "onsale.dependency" and r.getMessage().startswith(name)
            and what in r.getMessage()]


def assert_sentence(problem: dict[str, Any]) -> None:
    """A 503's detail is a sentence, never an exception's class name (the codes this
    suite is about; ``session_unavailable`` is core/sessions.py's)."""
    if problem["code"] in ("inventory_unavailable", "admission_unavailable",
                           "queue_unavailable"):
        assert " " in problem.get("detail", " "), problem


def hold_body(seats: list[int]) -> dict[str, Any]:
    return {"seat_ids": seats}


@contextlib.asynccontextmanager
async def running(app: Any) -> AsyncIterator[Api]:
    async with app.router.lifespan_context(app):
        yield Api(app)


def http(api: Api, account: uuid.UUID | None = None, **kw: Any) -> httpx.AsyncClient:
    client = api.client(account, **kw)
    client.timeout = httpx.Timeout(CLIENT_TIMEOUT)
    return client


# --- Valkey --------------------------------------------------------------------------------


async def test_a_stopped_valkey_answers_503_fast_and_recovers(
        db_url: str, conn: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="onsale.dependency")
    valkey = start_valkey(tmp_path / "valkey", persist=False)
    try:
        app = build_api_app(make_settings(db_url, redis_url=valkey.url, **FAIL_FAST))
        async with running(app) as api:
            event_id = await api.create_event(seats=40)
            alice, bob = await new_accounts(conn, 2)
            shopper = Visitor(api, alice, event_id)
            await shopper.join()
            assert shopper.token is not None
            headers = {"Admission-Token": shopper.token}
            async with http(api, alice, admit=False) as c:
                r = await c.post(f"/api/events/{event_id}/holds", json=hold_body([1]),
                                 headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
                assert r.status_code == 201, r.text

            api.session_cookie(bob)  # signed in before the outage (written to Valkey)
            assert valkey.process is not None
            with stopped([valkey.process.pid]):
                await asyncio.sleep(1.5)  # past the per-process caches (gate, sessions: ~1 s)
                async with http(api, alice, admit=False) as c:
                    for _ in range(3):  # each one answers at once, none waits for Valkey
                        r = await c.post(f"/api/events/{event_id}/holds",
                                         json=hold_body([2]),
                                         headers={**headers, "Idempotency-Key": "k-stopped"})
                        assert r.status_code == 503, r.text
                        assert r.json()["code"] in ("admission_unavailable",
                                                    "session_unavailable"), r.text
                        assert_sentence(r.json())
                        assert r.headers["retry-after"] == "1"
                    poll = await c.get(f"/api/events/{event_id}/queue",
                                       headers={"Queue-Ticket": shopper.ticket or ""})
                    assert poll.status_code == 503, poll.text
                    assert poll.json()["code"] in ("queue_unavailable", "session_unavailable")
                    assert_sentence(poll.json())
                async with http(api, bob, admit=False) as c:
                    join = await c.post(f"/api/events/{event_id}/queue")
                    assert join.status_code == 503, join.text
                    assert join.json()["code"] in ("queue_unavailable", "session_unavailable")
                assert dependency_lines(caplog, "Redis", "went away")

            async def held_again() -> bool:
                async with http(api, alice, admit=False) as c:
                    r = await c.post(f"/api/events/{event_id}/holds", json=hold_body([2]),
                                     headers={**headers, "Idempotency-Key": "k-stopped"})
                return r.status_code == 201

            await eventually(held_again, within=20)
            await eventually(lambda: _logged(caplog, "Redis", "came back"), within=10)
        assert len(dependency_lines(caplog, "Redis", "went away")) == 1
        assert len(dependency_lines(caplog, "Redis", "came back")) == 1
        assert not [r for r in caplog.records if r.exc_info], "no traceback per request"
        await audit_clean(conn)
    finally:
        valkey.stop()


async def _logged(caplog: pytest.LogCaptureFixture, name: str, what: str) -> bool:
    return bool(dependency_lines(caplog, name, what))


async def test_the_seat_map_answers_503_fast_while_valkey_is_stopped(
        db_url: str, conn: Any, tmp_path: Path) -> None:
    valkey = start_valkey(tmp_path / "valkey", persist=False)
    try:
        edge = build_api_app(make_settings(db_url, redis_url=valkey.url, **FAIL_FAST))
        seatmap = build_app("seatmap", make_settings(db_url, redis_url=valkey.url, **FAIL_FAST),
                            seatmap=seatmap_settings())
        async with running(edge) as api, running(seatmap) as maps:
            maps.sessions_settings = api.app.state.shared.settings
            event_id = await api.create_event(seats=40)
            (alice,) = await new_accounts(conn, 1)
            shopper = Visitor(api, alice, event_id)
            await shopper.join()
            assert shopper.token is not None
            url = f"/api/events/{event_id}/seatmap"
            headers = {"Admission-Token": shopper.token}
            async with http(maps, alice, admit=False) as c:
                ok = await c.get(url, headers=headers)  # no change capture: from the table
                assert ok.status_code == 200 and ok.headers["seatmap-source"] == "database"
                assert valkey.process is not None
                with stopped([valkey.process.pid]):
                    await asyncio.sleep(1.5)
                    for _ in range(3):
                        r = await c.get(url, headers=headers)
                        assert r.status_code == 503, r.text
                        assert r.json()["code"] in ("admission_unavailable",
                                                    "session_unavailable"), r.text

                async def served() -> bool:
                    return (await c.get(url, headers=headers)).status_code == 200

                await eventually(served, within=20)
    finally:
        valkey.stop()


# --- PostgreSQL ------------------------------------------------------------------------------


@pytest.fixture
async def own_cluster(tmp_path: Path) -> AsyncIterator[tuple[EmbeddedPostgres, str]]:
    """A throwaway cluster of this test's own (the shared one is never stopped)."""
    pg = start_postgres(tmp_path / "pg", fast=True)
    try:
        c = await asyncpg.connect(pg.url)
        try:
            await c.execute("CREATE DATABASE outage")
        finally:
            await c.close()
        url = pg.url_for("outage")
        c = await asyncpg.connect(url)
        try:
            await migrate(c)
        finally:
            await c.close()
        yield pg, url
    finally:
        with contextlib.suppress(Exception):
            for pid in cluster_pids(pg):
                os.kill(pid, signal.SIGCONT)
        pg.stop()


async def test_a_stopped_postgres_answers_503_fast_and_a_retried_hold_lands_once(
        own_cluster: tuple[EmbeddedPostgres, str], valkey: EmbeddedValkey,
        redis_client: redis.asyncio.Redis, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="onsale.dependency")
    pg, url = own_cluster
    app = build_api_app(make_settings(url, redis_url=valkey.url, **FAIL_FAST))
    async with running(app) as api, asyncpg_connect(url) as conn:
        event_id = await api.create_event(seats=40)
        alice = await api.account(conn)
        headers = await api.admit(alice, event_id)
        key = uuid.uuid4().hex
        pids = cluster_pids(pg)
        assert os.getpid() not in pids and len(pids) > 3
        async with http(api, alice, admit=False) as c:
            with stopped(pids):
                for attempt in range(3):  # the first waits its bound, the next fail at once
                    r = await c.post(f"/api/events/{event_id}/holds", json=hold_body([5, 6]),
                                     headers={**headers, "Idempotency-Key": key})
                    assert r.status_code == 503, (attempt, r.text)
                    assert r.json()["code"] == "inventory_unavailable"
                    assert_sentence(r.json())
                other = await c.post(f"/api/events/{event_id}/holds", json=hold_body([7]),
                                     headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
                assert other.status_code == 503 and other.json()["code"] == (
                    "inventory_unavailable")
                assert dependency_lines(caplog, "PostgreSQL", "went away")

            # Back: the pool did not keep the dead connections; the retry lands once.
            async def retried() -> httpx.Response | None:
                r = await c.post(f"/api/events/{event_id}/holds", json=hold_body([5, 6]),
                                 headers={**headers, "Idempotency-Key": key})
                return r if r.status_code in (200, 201) else None

            first = await eventually(retried, within=30)
            again = await c.post(f"/api/events/{event_id}/holds", json=hold_body([5, 6]),
                                 headers={**headers, "Idempotency-Key": key})
            assert again.json()["hold_id"] == first.json()["hold_id"]
            assert again.headers.get("idempotent-replayed") == "true"
        holds = await conn.fetch("SELECT hold_id FROM holds WHERE account_id = $1", alice)
        assert [h["hold_id"] for h in holds] == [uuid.UUID(first.json()["hold_id"])]
        seats = await conn.fetch("SELECT seat_id, status, hold_id FROM seat_inventory "
                                 "WHERE event_id = $1 AND status <> 'AVAILABLE' "
                                 "ORDER BY seat_id", event_id)
        assert [(s["seat_id"], s["status"], str(s["hold_id"])) for s in seats] == [
            (5, "HELD", first.json()["hold_id"]), (6, "HELD", first.json()["hold_id"])]
        await eventually(lambda: _logged(caplog, "PostgreSQL", "came back"), within=10)
        await audit_clean(conn)
    assert len(dependency_lines(caplog, "PostgreSQL", "went away")) == 1
    assert len(dependency_lines(caplog, "PostgreSQL", "came back")) == 1
    assert not [r for r in caplog.records if r.exc_info], "no traceback per request"
