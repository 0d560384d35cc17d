"""Sign up, sign in, sign out, and who am I — over HTTP with real password hashing."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import redis.asyncio

from onsale.core.passwords import scrypt_hash
from onsale.embedded import EmbeddedValkey
from onsale.kernel.sessions import COOKIE
from tests.conftest import Api, build_api_app, hold, make_settings


async def test_sign_up_sign_in_me_sign_out(api: Api, conn: Any) -> None:
    async with api.client() as c:
        r = await c.post("/api/accounts", json={"email": "Ada@Example.com",
                                                "password": "correct horse"})
        assert r.status_code == 201, r.text
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=lax" in cookie
        me = await c.get("/api/me")
        assert me.status_code == 200 and me.json()["email"] == "Ada@Example.com"

        out = await c.delete("/api/session")
        assert out.status_code == 204
        assert (await c.get("/api/me")).json()["code"] == "authentication_required"

        bad = await c.post("/api/session", json={"email": "ada@example.com", "password": "nope"})
        assert bad.status_code == 401 and bad.json()["code"] == "bad_credentials"
        unknown = await c.post("/api/session", json={"email": "who@example.com",
                                                     "password": "correct horse"})
        assert unknown.status_code == 401 and unknown.json()["code"] == "bad_credentials"

        ok = await c.post("/api/session", json={"email": "ada@example.com",
                                                "password": "correct horse"})
        assert ok.status_code == 200
        assert (await c.get("/api/me")).json()["account_id"] == me.json()["account_id"]
    stored = await conn.fetchval("SELECT password_hash FROM accounts")
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$") and "correct horse" not in stored


async def test_sign_up_errors(api: Api) -> None:
    async with api.client() as c:
        first = await c.post("/api/accounts", json={"email": "b@example.com",
                                                    "password": "12345678"})
        assert first.status_code == 201
        cases = [
            ({"email": "B@example.com", "password": "12345678"}, 409, "email_taken"),
            ({"email": "not-an-email", "password": "12345678"}, 400, "invalid_email"),
            ({"email": "c@example.com", "password": "1234567"}, 400, "weak_password"),
            ({"email": "c@example.com"}, 400, "weak_password"),
            ({"password": "12345678"}, 400, "invalid_email"),
        ]
        for body, status, code in cases:
            r = await c.post("/api/accounts", json=body)
            assert (r.status_code, r.json()["code"]) == (status, code), body
        assert (await c.post("/api/accounts", content=b"[]", headers={
            "Content-Type": "application/json"})).json()["code"] == "invalid_json"


async def test_forged_cookie_is_not_a_session(api: Api) -> None:
    async with api.client() as c:
        c.cookies.set(COOKIE, "eyJhIjoiMDAwMDAwMDAtMDAwMC0wMDAwLTAwMDAtMDAwMDAwMDAwMDAwIn0.x.y")
        assert (await c.get("/api/me")).status_code == 401


# --- throttling, the hashing pool and argon2id (core/signin_throttle.py) -------------------


class Clock:
    """The throttle's wall clock, moved by hand to step through lockouts."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def accounts_api(db_url: str, valkey: EmbeddedValkey,
                       **limits: Any) -> AsyncIterator[tuple[Api, Clock]]:
    app = build_api_app(make_settings(db_url, redis_url=valkey.url, **limits))
    async with app.router.lifespan_context(app):
        clock = Clock()
        app.state.core.throttle.clock = clock
        yield Api(app), clock


def from_ip(api: Api, ip: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=api.app, client=(ip, 5555)),
                             base_url="http://test")


async def signin(c: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    return await c.post("/api/session", json={"email": email, "password": password})


def limited(r: httpx.Response) -> int:
    assert (r.status_code, r.json()["code"]) == (429, "rate_limited"), r.text
    return int(r.headers["retry-after"])


async def test_a_guessing_flood_is_throttled_while_others_still_sign_in(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis) -> None:
    async with accounts_api(db_url, valkey, signin_limit_ip=8, signin_limit_email=100,
                            signin_lockout_after=3, signin_lockout_seconds=30,
                            signin_lockout_max_seconds=100) as (api, clock):
        async with from_ip(api, "198.51.100.1") as setup:
            for who in ("victim", "alice"):
                r = await setup.post("/api/accounts", json={
                    "email": f"{who}@example.com", "password": "correct horse"})
                assert r.status_code == 201
        async with from_ip(api, "203.0.113.66") as attacker:
            answers = [(await signin(attacker, "victim@example.com", f"guess-{i}")).status_code
                       for i in range(3)]
            assert answers == [401, 401, 401]
            # The third failure locked the email: not even the right password gets in.
            assert 0 < limited(await signin(attacker, "victim@example.com",
                                            "correct horse")) <= 30
            # Guessing other emails from the same address runs into its own limit.
            codes = [(await signin(attacker, f"x{i}@example.com", "guess")).status_code
                     for i in range(6)]
            assert codes[:4] == [401] * 4 and codes[4:] == [429, 429]
            assert 0 < limited(await signin(attacker, "alice@example.com",
                                            "correct horse")) <= 60
        # Meanwhile another shopper, elsewhere, signs in as usual.
        async with from_ip(api, "192.0.2.10") as shopper:
            ok = await signin(shopper, "alice@example.com", "correct horse")
            assert ok.status_code == 200, ok.text
            assert (await shopper.get("/api/me")).json()["email"] == "alice@example.com"
        # The victim, from a fresh address, waits out the lock (the lock doubles
        # with every further failure), then signs in, which clears the streak.
        async with from_ip(api, "192.0.2.11") as shopper:
            assert limited(await signin(shopper, "victim@example.com", "correct horse")) <= 30
            clock.now += 30
            assert (await signin(shopper, "victim@example.com", "nope")).status_code == 401
            assert limited(await signin(shopper, "victim@example.com", "x")) == 60
            clock.now += 60
            assert (await signin(shopper, "victim@example.com", "nope")).status_code == 401
            assert limited(await signin(shopper, "victim@example.com", "x")) == 100  # capped
            clock.now += 100
            good = await signin(shopper, "victim@example.com", "correct horse")
            assert good.status_code == 200, good.text
            for _ in range(2):  # the streak starts again from nothing
                assert (await signin(shopper, "victim@example.com", "nope")).status_code == 401
        # Nothing identifying is stored in clear.
        keys = [k.decode() for k in await redis_client.keys("onsale:signin:*")]
        assert keys and not any("victim" in k or "example" in k for k in keys)


async def test_sign_ups_count_against_the_address_too(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis) -> None:
    async with accounts_api(db_url, valkey, signin_limit_ip=3) as (api, _):
        async with from_ip(api, "203.0.113.9") as c:
            codes = [(await c.post("/api/accounts", json={
                "email": f"bulk{i}@example.com", "password": "12345678"})).status_code
                for i in range(4)]
            assert codes == [201, 201, 201, 429]
        async with from_ip(api, "203.0.113.10") as c:
            r = await c.post("/api/accounts", json={"email": "bulk9@example.com",
                                                    "password": "12345678"})
            assert r.status_code == 201


async def test_a_full_hashing_pool_refuses_sign_ins_but_not_holds(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with accounts_api(db_url, valkey, password_workers=1, password_queue=0) as (api, _):
        async with from_ip(api, "192.0.2.1") as c:
            r = await c.post("/api/accounts", json={"email": "p@example.com",
                                                    "password": "correct horse"})
            assert r.status_code == 201
        release = threading.Event()
        busy = asyncio.ensure_future(api.app.state.core.passwords.run(release.wait, 30))
        try:
            await asyncio.sleep(0)  # the job takes the pool's only slot
            assert api.app.state.core.passwords.pending == 1
            async with from_ip(api, "192.0.2.2") as c:
                r = await signin(c, "p@example.com", "correct horse")
                assert (r.status_code, r.json()["code"]) == (503, "sign_in_busy")
                assert r.headers["retry-after"] == "1"
            event_id = await api.create_event(seats=10)
            async with api.client(await api.account(conn)) as shopper:
                assert (await hold(shopper, event_id, [1, 2])).status_code == 201
        finally:
            release.set()
            await busy
        async with from_ip(api, "192.0.2.2") as c:
            assert (await signin(c, "p@example.com", "correct horse")).status_code == 200


async def test_a_scrypt_hash_becomes_argon2id_at_the_next_sign_in(api: Api, conn: Any) -> None:
    old = scrypt_hash("old password 1", n=2**10)
    await conn.execute("INSERT INTO accounts (email, password_hash) VALUES "
                       "('legacy@example.com', $1), ('other@example.com', $1)", old)
    async with api.client() as c:
        wrong = await signin(c, "other@example.com", "not it")
        assert wrong.status_code == 401
        ok = await signin(c, "legacy@example.com", "old password 1")
        assert ok.status_code == 200, ok.text
    stored = await conn.fetchval(
        "SELECT password_hash FROM accounts WHERE email = 'legacy@example.com'")
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert await conn.fetchval(  # a wrong password changes nothing
        "SELECT password_hash FROM accounts WHERE email = 'other@example.com'") == old
    async with api.client() as c:
        assert (await signin(c, "legacy@example.com", "old password 1")).status_code == 200
        assert (await signin(c, "legacy@example.com", "old password 2")).status_code == 401
    assert await conn.fetchval(
        "SELECT password_hash FROM accounts WHERE email = 'legacy@example.com'") == stored
