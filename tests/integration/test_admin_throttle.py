"""Failed operator-token attempts through the real app (core and the edge in one
process): past the limit an address gets 429 rate_limited with Retry-After on every
operator route, the right token included, while another address is unaffected
(docs/security.md#the-operator-token)."""

from __future__ import annotations

import logging

import httpx
import pytest
import redis.asyncio

from onsale.embedded import EmbeddedValkey
from tests.conftest import ADMIN_TOKEN, Api, build_api_app, make_settings

GOOD = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def from_address(api: Api, host: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=api.app, client=(host, 51000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def test_failed_operator_tokens_are_throttled_per_address(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        caplog: pytest.LogCaptureFixture) -> None:
    app = build_api_app(make_settings(db_url, redis_url=valkey.url, admin_limit_failures=3))
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await api.create_event()
        queue = f"/api/ops/events/{event_id}/queue"  # an edge route; /api/ops/events is core's
        async with from_address(api, "198.51.100.7") as guesser, \
                from_address(api, "203.0.113.9") as operator:
            with caplog.at_level(logging.WARNING, logger="onsale.security"):
                # A request with no token at all guesses nothing: not counted.
                assert (await guesser.get(queue)).status_code == 401
                for n in range(3):
                    wrong = await guesser.get(queue, headers={"Authorization": f"Bearer guess{n}"})
                    assert (wrong.status_code, wrong.json()["code"]) == (401, "admin_required")
                for route in (queue, "/api/ops/audit"):
                    limited = await guesser.get(route, headers=GOOD)  # even the right token
                    assert (limited.status_code, limited.json()["code"]) == (429, "rate_limited")
                    assert 1 <= int(limited.headers["retry-after"]) <= 60
                    assert limited.json()["retry_after"] == int(limited.headers["retry-after"])
                created = await guesser.post("/api/ops/events", json={"name": "x"},
                                             headers={"Authorization": "Bearer guess"})
                assert created.status_code == 429
                # The operator elsewhere is not locked out.
                assert (await operator.get(queue, headers=GOOD)).status_code == 200
                assert (await operator.get(queue, headers={"Authorization": "Bearer typo"})
                        ).status_code == 401
                assert (await operator.get(queue, headers=GOOD)).status_code == 200
        lines = [r.getMessage() for r in caplog.records if r.name == "onsale.security"]
        assert len(lines) == 4, lines  # three guesses and the operator's typo, no more
        assert all("198.51.100.7" in line for line in lines[:3]) and "203.0.113.9" in lines[3]
        assert not any("guess" in line or "typo" in line or ADMIN_TOKEN in line
                       for line in lines)
