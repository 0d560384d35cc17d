"""Cross-site request forgery, secure defaults and small holes, against the
in-process app (core with the edge mounted, real PostgreSQL and Valkey):
a foreign page's request is refused before anything is written; the site's own
pages and API clients (no Origin) work as before (docs/security.md)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio

from onsale.compose import Tiers, app_for
from onsale.embedded import EmbeddedValkey
from tests.conftest import ADMIN_TOKEN, Api, build_api_app, hold, make_settings

SITE = "http://127.0.0.1:8000"  # make_settings' public URL (the Settings default)
SAME = {"Origin": SITE}
EVIL = {"Origin": "https://evil.example"}
PASSWORD = "correct horse battery"


@pytest.fixture
async def api(db_url: str, valkey: EmbeddedValkey,
              redis_client: redis.asyncio.Redis) -> AsyncIterator[Api]:
    """Core and the edge with the pages in front, as the dev role serves them."""
    app = app_for(Tiers(core=True, edge=True, pages=True),
                  make_settings(db_url, redis_url=valkey.url))
    async with app.router.lifespan_context(app):
        yield Api(app)


def refused(r: httpx.Response) -> bool:
    return (r.status_code == 403 and r.json()["code"] == "cross_site_request"
            and "set-cookie" not in r.headers)


async def count(conn: Any, table: str) -> int:
    value: int = await conn.fetchval(f"SELECT count(*) FROM {table}")
    return value


# ---- Content-Type and Origin on the account routes ----------------------------

async def test_a_text_plain_sign_up_is_415_and_a_foreign_one_403(api: Api, conn: Any) -> None:
    body = json.dumps({"email": "mallory@example.com", "password": PASSWORD}).encode()
    async with api.client() as c:
        plain = await c.post("/api/accounts", content=body,
                             headers={"Content-Type": "text/plain", **SAME})
        form = await c.post("/api/accounts", content=b"email=a%40b.c&password=12345678",
                            headers={"Content-Type": "application/x-www-form-urlencoded"})
        evil_json = await c.post("/api/accounts", content=body,
                                 headers={"Content-Type": "application/json", **EVIL})
        evil_plain = await c.post("/api/accounts", content=body,
                                  headers={"Content-Type": "text/plain", **EVIL})
        assert not c.cookies
    assert plain.status_code == 415 and plain.json()["code"] == "unsupported_media_type"
    assert form.status_code == 415 and form.json()["code"] == "unsupported_media_type"
    assert "set-cookie" not in plain.headers
    assert refused(evil_json) and refused(evil_plain)
    assert await count(conn, "accounts") == 0

    async with api.client() as c:  # the site's own page, and an API client
        own = await c.post("/api/accounts", content=body, headers={
            "Content-Type": "application/json; charset=utf-8", **SAME})
        assert own.status_code == 201, own.text
    async with api.client() as c:
        script = await c.post("/api/accounts",
                              json={"email": "script@example.com", "password": PASSWORD})
        assert script.status_code == 201, script.text
    assert await count(conn, "accounts") == 2


async def test_foreign_sign_in_and_sign_out_are_refused(api: Api) -> None:
    async with api.client() as c:
        r = await c.post("/api/accounts", json={"email": "ada@example.com", "password": PASSWORD})
        assert r.status_code == 201
    credentials = {"email": "ada@example.com", "password": PASSWORD}
    async with api.client() as c:
        assert refused(await c.post("/api/session", json=credentials, headers=EVIL))
        assert refused(await c.post("/api/session", json=credentials,
                                    headers={"Sec-Fetch-Site": "cross-site"}))
        assert refused(await c.post("/api/session", json=credentials,
                                    headers={"Origin": "null"}))
        assert not c.cookies
        assert (await c.post("/api/session", json=credentials, headers=SAME)).status_code == 200
        assert (await c.get("/api/me")).status_code == 200
        assert refused(await c.delete("/api/session", headers=EVIL))
        assert refused(await c.delete("/api/session", headers={"Sec-Fetch-Site": "same-site"}))
        assert (await c.get("/api/me")).status_code == 200  # still signed in
        out = await c.delete("/api/session", headers={"Sec-Fetch-Site": "same-origin"})
        assert out.status_code == 204
        assert (await c.get("/api/me")).status_code == 401


async def test_the_page_sign_out_form_is_checked_too(api: Api, conn: Any) -> None:
    async with api.client(await api.account(conn)) as c:
        r = await c.post("/signout", headers={**EVIL, "Accept": "text/html"})
        assert refused(r)
        assert (await c.get("/api/me")).status_code == 200
        own = await c.post("/signout", headers={**SAME, "Accept": "text/html"})
        assert own.status_code == 303 and "set-cookie" in own.headers


# ---- the sales routes ---------------------------------------------------------------

async def test_foreign_hold_release_and_checkout_write_nothing(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10)
    account = await api.account(conn)
    async with api.client(account) as c:
        r = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1, 2]},
                         headers={"Idempotency-Key": "k1", **EVIL})
        assert refused(r)
        assert await count(conn, "holds") == 0
        assert await conn.fetchval("SELECT count(*) FROM seat_inventory WHERE event_id = $1 "
                                   "AND status <> 'AVAILABLE'", event_id) == 0

        own = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1, 2]},
                           headers={"Idempotency-Key": "k2", **SAME})
        assert own.status_code == 201, own.text
        hold_id = own.json()["hold_id"]

        pay = f"/api/holds/{hold_id}/checkout"
        assert refused(await c.post(pay, json={"payment_method": "pm_card_visa"},
                                    headers={"Idempotency-Key": "p1", **EVIL}))
        assert await count(conn, "orders") == 0
        # The site's own page gets past the check (no provider here: 503, not 403).
        mine = await c.post(pay, json={"payment_method": "pm_card_visa"},
                            headers={"Idempotency-Key": "p2", **SAME})
        assert mine.status_code == 503 and mine.json()["code"] == "payments_unavailable"

        assert refused(await c.delete(f"/api/holds/{hold_id}", headers=EVIL))
        assert await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1",
                                   uuid.UUID(hold_id)) == "HELD"
        released = await c.delete(f"/api/holds/{hold_id}")  # an API client: no Origin
        assert released.status_code == 200 and released.json()["status"] == "RELEASED"


async def test_foreign_queue_join_is_refused_before_redis(
        api: Api, conn: Any, redis_client: redis.asyncio.Redis) -> None:
    event_id = await api.create_event(queue_policy="fifo")
    account = await api.account(conn)
    queue = f"/api/events/{event_id}/queue"
    async with api.client(account, admit=False) as c:
        assert refused(await c.post(queue, headers=EVIL))
        assert refused(await c.post(queue, json={}, headers={"Sec-Fetch-Site": "cross-site"}))
        assert await redis_client.keys(f"onsale:{{e{event_id}}}:*") == []
        assert not [name for name in c.cookies if "queue" in name or "admission" in name]
        # An empty body needs no Content-Type; a body must be JSON.
        typed = await c.post(queue, content=b'{"pow": null}',
                             headers={"Content-Type": "text/plain", **SAME})
        assert typed.status_code == 415
        joined = await c.post(queue, headers=SAME)
        assert joined.status_code == 200, joined.text
        assert joined.json()["state"] in ("waiting", "admitted")


async def test_operator_routes_refuse_foreign_pages_and_take_the_token_as_a_header_only(
        api: Api) -> None:
    event_id = await api.create_event()
    bearer = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    path = f"/api/ops/events/{event_id}/queue"
    async with api.client() as c:
        assert refused(await c.post(f"{path}/pause", headers={**bearer, **EVIL}))
        assert (await c.get(path, headers=bearer)).json()["controller"]["paused"] is False
        # The token is a bearer header, never a query parameter or a cookie.
        async with httpx.AsyncClient(transport=api.transport, base_url="http://test", cookies={
                "token": ADMIN_TOKEN, "admin_token": ADMIN_TOKEN,
                "authorization": f"Bearer {ADMIN_TOKEN}"}) as jar:
            in_cookie = await jar.get(path)
        for r in (await c.get(f"{path}?token={ADMIN_TOKEN}"),
                  await c.get(f"{path}?access_token={ADMIN_TOKEN}"), in_cookie,
                  await c.get(path, headers={"Authorization": ADMIN_TOKEN})):
            assert r.status_code == 401 and r.json()["code"] == "admin_required"
        plain = await c.patch(path, content=b'{"active_cap": 5}',
                              headers={**bearer, "Content-Type": "text/plain"})
        assert plain.status_code == 415
        ok = await c.patch(path, json={"active_cap": 5}, headers=bearer)
        assert ok.status_code == 200 and ok.json()["settings"]["active_cap"] == 5
        created = await c.post("/api/ops/events", content=b'{"name": "x", "seats": 5}',
                               headers={**bearer, "Content-Type": "text/plain"})
        assert created.status_code == 415


# ---- headers --------------------------------------------------------------------------

async def test_pages_carry_the_page_policy(api: Api, conn: Any) -> None:
    event_id = await api.create_event()
    async with api.client(await api.account(conn)) as c:
        for path in ("/", f"/events/{event_id}", "/signin", f"/events/{event_id}/seats",
                     "/ops/", "/events/404404"):
            r = await c.get(path, headers={"Accept": "text/html"})
            assert r.headers["content-type"].startswith("text/html"), path
            csp = r.headers["content-security-policy"]
            assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp, path
            assert "'unsafe-inline'" not in csp
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["referrer-policy"] == "strict-origin-when-cross-origin"
            assert r.headers["x-frame-options"] == "DENY"
            assert "strict-transport-security" not in r.headers  # the public URL is http
            # No inline script (JSON data blocks are not scripts) and no inline handler.
            html = r.text
            for tag in html.split("<script")[1:]:
                assert tag.startswith((' type="application/json"', ' type="module" src=')), path
            assert " onclick=" not in html and " style=" not in html, path
        api_doc = await c.get(f"/api/events/{event_id}")
        assert api_doc.headers["x-content-type-options"] == "nosniff"
        assert "content-security-policy" not in api_doc.headers


@pytest.fixture
async def https_api(db_url: str, valkey: EmbeddedValkey,
                    redis_client: redis.asyncio.Redis) -> AsyncIterator[Api]:
    app = build_api_app(make_settings(db_url, redis_url=valkey.url,
                                      public_url="https://shop.example"))
    async with app.router.lifespan_context(app):
        yield Api(app)


async def test_https_gets_hsts_and_host_prefixed_secure_cookies(https_api: Api) -> None:
    api = https_api
    event_id = await api.create_event(seats=10)
    async with httpx.AsyncClient(transport=api.transport, base_url="https://shop.example",
                                 headers={"Origin": "https://shop.example"}) as c:
        health = await c.get("/healthz")
        assert health.headers["strict-transport-security"] == \
            "max-age=63072000; includeSubDomains"
        r = await c.post("/api/accounts", json={"email": "h@example.com", "password": PASSWORD})
        assert r.status_code == 201, r.text
        joined = await c.post(f"/api/events/{event_id}/queue")
        assert joined.status_code == 200 and joined.json()["state"] == "admitted"
        cookies = {h.split("=", 1)[0]: h.lower() for h in joined.headers.get_list("set-cookie")}
        for name in (f"__Host-onsale_queue_{event_id}", f"__Host-onsale_admission_{event_id}"):
            assert "; secure" in cookies[name] and "; path=/" in cookies[name], cookies
            assert "domain=" not in cookies[name]
        # The readers use the same names: the poll knows the ticket, the gate the admission.
        assert (await c.get(f"/api/events/{event_id}/queue")).json()["state"] == "admitted"
        held = await hold(c, event_id, [1])
        assert held.status_code == 201, held.text
        assert refused(await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [2]},
                                    headers={"Idempotency-Key": "x",
                                             "Origin": "http://shop.example"}))


async def test_the_allowed_origins_setting_admits_another_site(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis) -> None:
    app = build_api_app(make_settings(db_url, redis_url=valkey.url,
                                      allowed_origins=("https://tickets.example",)))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://test") as c:
            body = {"email": "o@example.com", "password": PASSWORD}
            other = await c.post("/api/accounts", json=body,
                                 headers={"Origin": "https://tickets.example"})
            assert other.status_code == 201, other.text
            evil = await c.post("/api/accounts", json=body, headers=EVIL)
            assert refused(evil)


# ---- small holes: non-ASCII digits, the favicon ------------------------------------------

async def test_non_ascii_digit_ids_are_404_not_500(api: Api, conn: Any) -> None:
    ids = [await api.create_event(seats=5) for _ in range(3)]
    account = await api.account(conn)
    # '²'.isdigit() is true and int('²') raises; int('٣') (Arabic-Indic) is 3.
    weird = ["²", "٣", "１", "߀", "3²", "9" * 30]
    async with api.client(account) as c:
        if 3 in ids:  # the ASCII id works, its Arabic-Indic spelling does not
            assert (await c.get("/api/events/3")).status_code == 200
        for raw in weird:
            for path in (f"/api/events/{raw}", f"/api/events/{raw}/venue",
                         f"/api/events/{raw}/queue/draw", f"/api/ops/events/{raw}/queue"):
                r = await c.get(path, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
                assert r.status_code == 404, (path, r.status_code)
                assert r.json()["code"] in ("event_not_found", "not_found"), path
            for r in (await c.post(f"/api/events/{raw}/queue", json={}),
                      await c.post(f"/api/events/{raw}/holds", json={"seat_ids": [1]},
                                   headers={"Idempotency-Key": "k"})):
                assert r.status_code == 404, (raw, r.status_code, r.text)
            for path in (f"/events/{raw}", f"/events/{raw}/seats", f"/events/{raw}/queue",
                         f"/ops/events/{raw}"):
                r = await c.get(path, headers={"Accept": "text/html"})
                assert r.status_code == 404, (path, r.status_code)
                assert r.headers["content-type"].startswith("text/html")
        for raw in ("٣" * 32, "٣" * 8 + "-" + "٣" * 4 + "-" + "٣" * 4 + "-" + "٣" * 4 + "-"
                    + "٣" * 12):
            assert (await c.get(f"/api/holds/{raw}")).status_code == 404
            assert (await c.get(f"/api/orders/{raw}")).status_code == 404
            assert (await c.get(f"/checkout/{raw}", headers={"Accept": "text/html"})
                    ).status_code == 404
        for query in ("page=²", "per_page=٣", "page=" + "9" * 5000):
            r = await c.get(f"/api/events/{ids[0]}/queue/draw?{query}")
            assert r.status_code in (400, 404) and r.json()["code"] in (
                "invalid_request", "event_not_found"), query
        lab = await c.get("/ops/fairness?event=²", headers={"Accept": "text/html"})
        assert lab.status_code == 200


async def test_the_favicon(api: Api) -> None:
    async with api.client() as c:
        icon = await c.get("/favicon.ico")
        svg = await c.get("/static/favicon.svg")
        home = await c.get("/")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert icon.content.startswith(b"<svg") and icon.content == svg.content
    assert b"<script" not in icon.content
    assert '<link rel="icon" href="/static/favicon.svg"' in home.text
