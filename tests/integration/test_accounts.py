"""Sign up, sign in, sign out, and who am I — over HTTP with real password hashing."""

from __future__ import annotations

from typing import Any

from core.sessions import COOKIE
from tests.conftest import Api


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
    assert stored.startswith("scrypt$") and "correct horse" not in stored


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
        assert (await c.post("/api/accounts", content=b"[]")).json()["code"] == "invalid_json"


async def test_forged_cookie_is_not_a_session(api: Api) -> None:
    async with api.client() as c:
        c.cookies.set(COOKIE, "eyJhIjoiMDAwMDAwMDAtMDAwMC0wMDAwLTAwMDAtMDAwMDAwMDAwMDAwIn0.x.y")
        assert (await c.get("/api/me")).status_code == 401
