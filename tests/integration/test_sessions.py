"""Server-side sessions against real Valkey and PostgreSQL: signing out ends
every copy of the cookie (in this process at once, in another within the
cache time), signing out everywhere ends them all, signing in never keeps a
session id it was handed, and a session store that is down or silent is a
503, never a guess (core/sessions.py, core/session_store.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio

from onsale.embedded import EmbeddedValkey, start_valkey
from onsale.kernel.session_store import index_key, record_key
from onsale.kernel.sessions import COOKIE
from tests.conftest import Api, build_api_app, hold, make_settings
from tests.stack import eventually

PASSWORD = "correct horse battery"


def client(api: Api, ip: str = "127.0.0.1") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=api.app, client=(ip, 4321)),
                             base_url="http://test")


async def sign_up(api: Api, email: str | None = None) -> tuple[str, str, str]:
    """(email, account id, session cookie value) of a new account."""
    email = email or f"s{uuid.uuid4().hex[:10]}@example.com"
    async with client(api) as c:
        r = await c.post("/api/accounts", json={"email": email, "password": PASSWORD})
        assert r.status_code == 201, r.text
        return email, r.json()["account_id"], r.cookies[COOKIE]


async def sign_in(api: Api, email: str, cookie: str | None = None) -> httpx.Response:
    async with client(api) as c:
        if cookie is not None:
            c.cookies.set(COOKIE, cookie)
        return await c.post("/api/session", json={"email": email, "password": PASSWORD})


async def me(api: Api, cookie: str) -> httpx.Response:
    async with client(api) as c:
        return await c.get("/api/me", headers={"Cookie": f"{COOKIE}={cookie}"})


def session_id(api: Api, cookie: str) -> str:
    ref = api.app.state.shared.sessions.codec.decode(cookie)
    assert ref is not None
    return str(ref.session_id)


async def test_a_copied_cookie_is_signed_out_with_its_session(api: Api) -> None:
    _, account, cookie = await sign_up(api)
    copy = cookie  # another browser, or a thief, holds the same value
    assert (await me(api, copy)).json()["account_id"] == account
    async with client(api) as c:
        c.cookies.set(COOKIE, cookie)
        out = await c.delete("/api/session")
    assert out.status_code == 204
    assert 'onsale_session=""' in out.headers["set-cookie"]
    after = await me(api, copy)
    assert (after.status_code, after.json()["code"]) == (401, "authentication_required")


async def test_another_process_sees_a_sign_out_within_its_cache_time(
        api: Api, db_url: str, valkey: EmbeddedValkey) -> None:
    """Two core processes on one Valkey: the one that did not sign the session
    out trusted it for at most a second, then refuses it."""
    other_app = build_api_app(make_settings(db_url, redis_url=valkey.url))
    async with other_app.router.lifespan_context(other_app):
        other = Api(other_app)
        _, _, cookie = await sign_up(api)
        assert (await me(other, cookie)).status_code == 200  # now cached as live there
        async with client(api) as c:
            c.cookies.set(COOKIE, cookie)
            assert (await c.delete("/api/session")).status_code == 204

        async def refused_there() -> bool:
            return (await me(other, cookie)).status_code == 401

        assert await eventually(refused_there, within=10, interval=0.05)


async def test_sign_out_everywhere_ends_every_session_of_the_account(
        api: Api, redis_client: redis.asyncio.Redis, conn: Any) -> None:
    email, account, laptop = await sign_up(api)
    phone = (await sign_in(api, email)).cookies[COOKIE]
    tablet = (await sign_in(api, email)).cookies[COOKIE]
    _, _, stranger = await sign_up(api)
    for cookie in (laptop, phone, tablet, stranger):
        assert (await me(api, cookie)).status_code == 200
    members = await redis_client.zrange(index_key(uuid.UUID(account)), 0, -1)
    assert {m.decode() for m in members} == {session_id(api, c) for c in (laptop, phone, tablet)}

    async with client(api) as c:
        c.cookies.set(COOKIE, phone)
        out = await c.delete("/api/sessions")
    assert out.status_code == 204 and 'onsale_session=""' in out.headers["set-cookie"]
    for cookie in (laptop, phone, tablet):
        r = await me(api, cookie)
        assert (r.status_code, r.json()["code"]) == (401, "authentication_required")
    assert (await me(api, stranger)).status_code == 200  # another account is untouched
    assert await redis_client.exists(index_key(uuid.UUID(account))) == 0
    for cookie in (laptop, phone, tablet):
        assert await redis_client.exists(
            record_key(uuid.UUID(account), session_id(api, cookie))) == 0
    # Signing in again afterwards works, with a new session.
    assert (await sign_in(api, email)).status_code == 200
    async with client(api) as c:
        nobody = await c.delete("/api/sessions")
    assert (nobody.status_code, nobody.json()["code"]) == (401, "authentication_required")


async def test_signing_in_issues_a_new_session_id_and_revokes_the_planted_one(
        api: Api, redis_client: redis.asyncio.Redis) -> None:
    """Session fixation: a cookie planted in the victim's browser (here a live
    session of the attacker's own account) is never the one the victim ends
    up signed in with, and it stops working."""
    victim, victim_id, first = await sign_up(api)
    _, attacker_id, planted = await sign_up(api)
    r = await sign_in(api, victim, cookie=planted)
    assert r.status_code == 200 and r.json()["account_id"] == victim_id
    fresh = r.cookies[COOKIE]
    ids = {session_id(api, c) for c in (first, planted, fresh)}
    assert len(ids) == 3  # a new id, not the planted one, not the earlier one
    assert (await me(api, fresh)).json()["account_id"] == victim_id
    assert (await me(api, planted)).status_code == 401  # replaced in that browser
    assert (await me(api, first)).json()["account_id"] == victim_id  # another browser's
    again = (await sign_in(api, victim, cookie=fresh)).cookies[COOKIE]
    assert session_id(api, again) != session_id(api, fresh)
    assert (await me(api, fresh)).status_code == 401
    ttl = await redis_client.pttl(record_key(uuid.UUID(victim_id), session_id(api, again)))
    assert 0 < ttl <= api.app.state.shared.settings.session_max_age * 1000
    assert attacker_id != victim_id


@contextlib.asynccontextmanager
async def throwaway(db_url: str, tmp_path: Path) -> AsyncIterator[tuple[Api, EmbeddedValkey]]:
    server = start_valkey(tmp_path / "valkey", persist=False)
    try:
        app = build_api_app(make_settings(db_url, redis_url=server.url,
                                          session_store_timeout=0.2))
        async with app.router.lifespan_context(app):
            yield Api(app), server
    finally:
        if server.process is not None and server.process.poll() is None:
            os.kill(server.process.pid, signal.SIGCONT)
        server.stop()


def unavailable(r: httpx.Response) -> None:
    assert (r.status_code, r.json()["code"]) == (503, "session_unavailable"), r.text
    assert r.headers["retry-after"] == "1"
    assert r.headers["content-type"] == "application/problem+json"


async def test_a_stopped_session_store_is_503_on_authenticated_routes(
        db_url: str, tmp_path: Path, conn: Any) -> None:
    async with throwaway(db_url, tmp_path) as (api, server):
        event_id = await api.create_event(seats=10)
        email, _, cookie = await sign_up(api)
        server.stop()
        unavailable(await me(api, cookie))
        async with client(api) as c:
            c.cookies.set(COOKIE, cookie)
            unavailable(await hold(c, event_id, [1]))
            unavailable(await c.delete("/api/session"))  # not "signed out" on a guess
            unavailable(await c.delete("/api/sessions"))
        unavailable(await sign_in(api, email))
        async with client(api) as c:
            anonymous = await c.get("/api/me")  # no cookie: nobody, without asking
        assert (anonymous.status_code, anonymous.json()["code"]) == (
            401, "authentication_required")
    assert await conn.fetchval("SELECT count(*) FROM holds") == 0


async def test_a_silent_session_store_is_503_then_recovers(
        db_url: str, tmp_path: Path) -> None:
    """A Valkey that stops answering (SIGSTOP) times out into a 503; once it
    answers again, so do sessions."""
    async with throwaway(db_url, tmp_path) as (api, server):
        _, account, cookie = await sign_up(api)
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            unavailable(await me(api, cookie))
        finally:
            os.kill(server.process.pid, signal.SIGCONT)

        async def back() -> bool:
            r = await me(api, cookie)
            return r.status_code == 200 and r.json()["account_id"] == account

        assert await eventually(back, within=10, interval=0.05)


async def test_without_redis_sign_up_and_sign_in_fail_closed(db_url: str, conn: Any) -> None:
    from onsale.compose import Tiers, app_for

    app = app_for(Tiers(core=True), make_settings(db_url))  # REDIS_URL unset
    async with app.router.lifespan_context(app):
        api = Api(app)
        async with client(api) as c:
            up = await c.post("/api/accounts", json={"email": "n@example.com",
                                                     "password": PASSWORD})
            unavailable(up)
            unavailable(await c.post("/api/session", json={"email": "n@example.com",
                                                           "password": PASSWORD}))
    assert await conn.fetchval("SELECT count(*) FROM accounts") == 0
