"""The security middleware (core/security.py) on a tiny app, and its settings."""

from __future__ import annotations

import dataclasses

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from onsale.kernel.config import ConfigError, Settings
from onsale.kernel.config_sessions import SecuritySettings
from onsale.kernel.security import HSTS, security_middleware, security_options
from onsale.kernel.settings import load

BASE = Settings(database_url="postgresql://x", redis_url=None, secret_key="s" * 32,
                admin_token="a" * 32, public_url="https://shop.example")
calls: list[str] = []


async def page(request: Request) -> Response:
    return HTMLResponse("<!doctype html><p>hi</p>")


async def framed(request: Request) -> Response:
    return HTMLResponse("<p>embeddable</p>", headers={"X-Frame-Options": "SAMEORIGIN"})


async def write(request: Request) -> Response:
    calls.append(request.method)
    return JSONResponse({"ok": True})


def client(settings: Settings = BASE) -> httpx.AsyncClient:
    app = Starlette(routes=[Route("/page", page), Route("/framed", framed),
                            Route("/write", write, methods=["GET", "POST", "PUT", "DELETE"])],
                    middleware=[security_middleware(settings)])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://t")


async def test_pages_get_the_page_policy_and_every_response_the_basics() -> None:
    async with client() as c:
        html, json_ = await c.get("/page"), await c.get("/write")
        kept = await c.get("/framed")
    for r in (html, json_):
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "strict-origin-when-cross-origin"
        assert r.headers["strict-transport-security"] == HSTS
    csp = html.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert html.headers["x-frame-options"] == "DENY"
    assert "content-security-policy" not in json_.headers
    assert kept.headers["x-frame-options"] == "SAMEORIGIN"  # a route's own header wins
    assert kept.headers.get_list("x-frame-options") == ["SAMEORIGIN"]


async def test_hsts_only_for_an_https_public_url() -> None:
    async with client(dataclasses.replace(BASE, public_url="http://127.0.0.1:8000")) as c:
        r = await c.get("/page")
    assert "strict-transport-security" not in r.headers
    assert "content-security-policy" in r.headers


@pytest.mark.parametrize(("method", "headers", "status"), [
    ("POST", {"Origin": "https://evil.example"}, 403),
    ("PUT", {"Origin": "null"}, 403),
    ("DELETE", {"Sec-Fetch-Site": "cross-site"}, 403),
    ("POST", {"Origin": "https://shop.example"}, 200),
    ("POST", {"Origin": "https://www.shop.example"}, 200),  # ONSALE_ALLOWED_ORIGINS
    ("POST", {}, 200),  # an API client
    ("GET", {"Origin": "https://evil.example"}, 200),  # safe methods pass
])
async def test_the_origin_check(method: str, headers: dict[str, str], status: int) -> None:
    calls.clear()
    settings = dataclasses.replace(BASE, allowed_origins=("https://www.shop.example",))
    async with client(settings) as c:
        r = await c.request(method, "/write", headers=headers)
    assert r.status_code == status
    if status == 403:
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "cross_site_request"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert calls == []  # the route never ran
    else:
        assert calls == [method]


def test_allowed_origins_setting() -> None:
    assert load(SecuritySettings, {}).allowed_origins == ()
    assert load(SecuritySettings, {"ONSALE_ALLOWED_ORIGINS": ""}).allowed_origins == ()
    got = load(SecuritySettings, {"ONSALE_ALLOWED_ORIGINS":
                                  " https://WWW.shop.example , http://127.0.0.1:9000/,,"
                                  "https://www.shop.example"})
    assert got.allowed_origins == ("https://www.shop.example", "http://127.0.0.1:9000")
    for bad in ("https://shop.example/path", "shop.example", "*", "null", "ftp://x"):
        with pytest.raises(ConfigError, match="ONSALE_ALLOWED_ORIGINS"):
            load(SecuritySettings, {"ONSALE_ALLOWED_ORIGINS": bad})
    env = {"DATABASE_URL": "postgresql://x", "ONSALE_SECRET_KEY": "s" * 32,
           "ONSALE_ADMIN_TOKEN": "a" * 32, "ONSALE_ALLOWED_ORIGINS": "https://a.example"}
    assert Settings.from_env(env).allowed_origins == ("https://a.example",)


def test_security_options() -> None:
    options = security_options(dataclasses.replace(BASE, allowed_origins=("https://a.example",)))
    assert options["allowed_origins"] == {"https://shop.example", "https://a.example"}
    assert options["hsts"] is True
    assert "wss://a.example" in options["csp"] and "wss://shop.example" in options["csp"]
