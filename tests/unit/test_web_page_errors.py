"""Errors under pages are pages for browsers, problem+json for API clients."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette

from onsale.compose import build_app
from onsale.kernel.config import Settings
from onsale.web.messages import SENTENCES

SETTINGS = Settings(database_url="postgresql://unused/x", redis_url="redis://unused:1/0",
                    secret_key="unit-test-secret-0123456789",
                    admin_token="unit-test-admin-0123456789")
HTML = {"Accept": "text/html,application/xhtml+xml"}


def client(app: Starlette) -> httpx.AsyncClient:
    """No lifespan: nothing here touches a database."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


@pytest.mark.parametrize("role", ["core", "dev"])
async def test_a_browser_gets_a_page_with_a_sentence(role: str) -> None:
    async with client(build_app(role, SETTINGS)) as c:
        missing = await c.get("/no-such-page", headers=HTML)
        wrong = await c.get("/signout", headers=HTML)
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("text/html")
    assert SENTENCES["not_found"] in missing.text and "<main" in missing.text
    assert wrong.status_code == 405 and SENTENCES["method_not_allowed"] in wrong.text


async def test_api_clients_and_api_paths_keep_problem_json() -> None:
    async with client(build_app("dev", SETTINGS)) as c:
        plain = await c.get("/no-such-page")
        api = await c.get("/api/no-such-thing", headers=HTML)
    assert plain.status_code == 404
    assert plain.headers["content-type"] == "application/problem+json"
    assert plain.json()["code"] == "not_found"
    assert api.headers["content-type"] == "application/problem+json"
