"""Helpers for the waiting-room tests: an in-process app (core + edge, real
Postgres and Valkey), accounts in bulk, visitors that join and poll, and an
admitter driven tick by tick (no timed assertions: loops with deadlines)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from onsale.edge.admitter import Admitter
from onsale.edge.queue_store import EventKeys
from onsale.edge.runtime import Edge
from tests.conftest import Api, build_api_app, make_settings


@contextlib.asynccontextmanager
async def edge_api(db_url: str, redis_url: str, **overrides: Any) -> AsyncIterator[Api]:
    """Core with the edge mounted, no admitter running (tests drive their own)."""
    app = build_api_app(make_settings(db_url, redis_url=redis_url, **overrides))
    async with app.router.lifespan_context(app):
        yield Api(app)


def edge_of(api: Api) -> Edge:
    edge: Edge = api.app.state.edge
    return edge


async def new_accounts(conn: Any, n: int) -> list[uuid.UUID]:
    rows = await conn.fetch(
        "INSERT INTO accounts (email, password_hash) "
        "SELECT 'v' || gen_random_uuid() || '@example.com', 'x' FROM generate_series(1, $1) "
        "RETURNING account_id", n)
    return [r["account_id"] for r in rows]


async def queue_event(api: Api, **body: Any) -> int:
    """A queued (not passthrough) event, on sale now, admitting fast unless told."""
    body.setdefault("queue_policy", "fifo")
    body.setdefault("admission_rate_min", 60_000)
    body.setdefault("admission_rate_max", 60_000)
    return await api.create_event(**body)


class Visitor:
    """One account on one device: joins, then polls with its ticket."""

    def __init__(self, api: Api, account: uuid.UUID, event_id: int) -> None:
        self.api, self.account, self.event_id = api, account, event_id
        self.ticket: str | None = None
        self.last: dict[str, Any] = {}

    def client(self) -> httpx.AsyncClient:
        return self.api.client(self.account, admit=False)

    async def join(self, **body: Any) -> httpx.Response:
        headers = {"Queue-Ticket": self.ticket} if self.ticket else {}
        async with self.client() as c:
            r = await c.post(f"/api/events/{self.event_id}/queue", json=body or None,
                             headers=headers)
        self._keep(r)
        return r

    async def poll(self) -> httpx.Response:
        headers = {"Queue-Ticket": self.ticket} if self.ticket else {}
        if self.last.get("admission_token"):
            headers["Admission-Token"] = self.last["admission_token"]
        async with self.client() as c:
            r = await c.get(f"/api/events/{self.event_id}/queue", headers=headers)
        self._keep(r)
        return r

    def _keep(self, r: httpx.Response) -> None:
        if r.status_code == 200:
            self.last = r.json()
            if self.last.get("ticket"):
                self.ticket = self.last["ticket"]

    @property
    def state(self) -> str:
        return str(self.last.get("state"))

    @property
    def token(self) -> str | None:
        token = self.last.get("admission_token")
        return str(token) if token else None


async def join_all(api: Api, accounts: list[uuid.UUID], event_id: int,
                   concurrently: bool = True) -> list[Visitor]:
    visitors = [Visitor(api, a, event_id) for a in accounts]
    if concurrently:
        answers = await asyncio.gather(*(v.join() for v in visitors))
    else:
        answers = [await v.join() for v in visitors]
    assert all(r.status_code == 200 for r in answers), [r.text for r in answers][:3]
    return visitors


def admitter_for(api: Api, *, owner: str | None = None, **kw: Any) -> Admitter:
    kw.setdefault("control_seconds", 0.0)
    kw.setdefault("record", True)
    return Admitter(edge_of(api), owner=owner, **kw)


async def tick_until(admitter: Admitter, done: Callable[[], Awaitable[Any]],
                     within: float = 30.0) -> Any:
    deadline = time.monotonic() + within
    last: Any = None
    while time.monotonic() < deadline:
        await admitter.tick()
        last = await done()
        if last:
            return last
        await asyncio.sleep(0.02)
    raise AssertionError(f"not reached within {within}s; last: {last!r}")


async def refresh(api: Api) -> None:
    """What each edge process does a few times a second, now."""
    edge = edge_of(api)
    await edge.status.refresh()
    await edge.configs.refresh()


def keys(event_id: int) -> EventKeys:
    return EventKeys(event_id)
