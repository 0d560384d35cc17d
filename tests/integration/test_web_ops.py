"""The operator console against real Postgres and Valkey: its pages, the
dashboard figures, the cached audit and the fairness lab's endpoint."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import redis.asyncio

from onsale.core.queries import queries
from onsale.edge.ops_cache import OpsState
from onsale.embedded import EmbeddedValkey
from onsale.web import ops_pages
from tests.conftest import ADMIN_TOKEN, Api, build_api_app, make_settings
from tests.integration.edge_support import new_accounts, queue_event

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@contextlib.asynccontextmanager
async def console(db_url: str, redis_url: str) -> AsyncIterator[Api]:
    """Core with the edge and the console's pages, as ``onsale dev`` serves them."""
    app = build_api_app(make_settings(db_url, redis_url=redis_url))
    app.router.routes[:0] = ops_pages.routes
    async with app.router.lifespan_context(app):
        yield Api(app)


async def get(api: Api, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
    async with api.client() as c:
        return await c.get(path, headers=headers)


async def test_the_pages_render_and_link_the_events(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis) -> None:
    async with console(db_url, valkey.url) as api:
        event_id = await queue_event(api, name="Console night", queue_policy="random")
        index = await get(api, "/ops/")
        assert index.status_code == 200
        assert f'href="/ops/events/{event_id}"' in index.text
        assert "Console night" in index.text and "random draw" in index.text
        bare = await get(api, "/ops")
        assert bare.status_code in (307, 308) and bare.headers["location"].endswith("/ops/")
        page = await get(api, f"/ops/events/{event_id}")
        assert page.status_code == 200
        assert f'data-event-id="{event_id}"' in page.text
        assert 'id="pause"' in page.text and 'data-figure="cdc_lag"' in page.text
        assert (await get(api, "/ops/events/999999")).status_code == 404
        assert (await get(api, "/ops/events/nope")).status_code == 404
        lab = await get(api, f"/ops/fairness?event={event_id}")
        assert lab.status_code == 200
        assert f'value="{event_id}"' in lab.text and "selected" in lab.text
        signin = await get(api, "/ops/signin")
        assert 'id="admin-token"' in signin.text and 'type="password"' in signin.text
        assert "/static/js/ops_signin_page.js" in signin.text  # which imports ops.js


async def test_the_dashboard_needs_the_token_and_shows_the_queue(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with console(db_url, valkey.url) as api:
        event_id = await queue_event(api, admission_rate_min=60, admission_rate_max=120,
                                     active_cap=7)
        path = f"/api/ops/events/{event_id}/dashboard"
        refused = await get(api, path)
        assert (refused.status_code, refused.json()["code"]) == (401, "admin_required")
        wrong = await get(api, path, {"Authorization": "Bearer not-the-token"})
        assert wrong.status_code == 401
        missing = await get(api, "/api/ops/events/999999/dashboard", ADMIN)
        assert (missing.status_code, missing.json()["code"]) == (404, "event_not_found")
        for account in await new_accounts(conn, 3):
            assert (await api.join(account, event_id)).status_code == 200
        # nothing cached from before the joins
        api.app.state.edge = dataclasses.replace(api.app.state.edge, ops=OpsState())
        r = await get(api, path, ADMIN)
        assert r.status_code == 200, r.text
        doc = r.json()
        assert doc["event_id"] == event_id
        settings, live = doc["queue"]["settings"], doc["queue"]["live"]
        assert settings["admission_rate_min"] == 60 and settings["active_cap"] == 7
        assert settings["policy_frozen"] is True   # on sale now
        assert live["queued"] + live["admitted_not_arrived"] + live["active"] == 3
        assert set(doc["health"]) >= {"redis_ok", "hold_p99_ms", "conflict_rate"}
        assert doc["health"]["redis_ok"] is True
        assert doc["payments"] == {"available": True, "unknown": 0, "pending": 0,
                                   "requires_action": 0, "oldest_unknown_seconds": 0.0}
        assert doc["cdc"]["slot"] == "onsale_seatmap"
        assert doc["cdc"]["present"] is False       # no change capture in this app
        again = (await get(api, path, ADMIN)).json()
        assert again["at"] == doc["at"]            # one read per second, shared


async def test_the_audit_is_cached_and_reports_violations(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with console(db_url, valkey.url) as api:
        assert (await get(api, "/api/ops/audit")).status_code == 401
        first = await get(api, "/api/ops/audit", ADMIN)
        assert first.status_code == 200, first.text
        doc = first.json()
        assert doc["ok"] is True and doc["violations"] == 0
        assert [c["name"] for c in doc["checks"]] == list(queries("audit"))
        event_id = await api.create_event(seats=10)
        # A seat sold to no order: invariant 3 broken behind the API's back.
        await conn.execute("ALTER TABLE seat_inventory DISABLE TRIGGER USER")
        try:
            await conn.execute("UPDATE seat_inventory SET status = 'SOLD', order_id = $2 "
                               "WHERE event_id = $1 AND seat_id = 1", event_id, uuid.uuid4())
        finally:
            await conn.execute("ALTER TABLE seat_inventory ENABLE TRIGGER USER")
        cached = (await get(api, "/api/ops/audit?fresh=1", ADMIN)).json()
        assert cached["checked_at"] == doc["checked_at"] and cached["ok"] is True
        # as if the cache had expired
        api.app.state.edge = dataclasses.replace(api.app.state.edge, ops=OpsState())
        found = (await get(api, "/api/ops/audit", ADMIN)).json()
        assert found["ok"] is False and found["violations"] >= 1
        bad = {c["name"]: c for c in found["checks"]}["sold_seats_point_to_confirmed_orders"]
        assert bad["ok"] is False and bad["sample"][0]["seat_id"] == 1


async def test_the_fairness_lab_endpoint(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis) -> None:
    async with console(db_url, valkey.url) as api:
        event_id = await queue_event(api, seats=150, max_tickets_per_account=3,
                                     admission_rate_min=30, admission_rate_max=90,
                                     active_cap=40)

        async def post(body: Any, headers: dict[str, str] | None = ADMIN) -> httpx.Response:
            async with api.client() as c:
                return await c.post("/api/ops/fairness", json=body, headers=headers)

        assert (await post({"preset": "flat"}, None)).status_code == 401
        r = await post({"event_id": event_id, "preset": "spike", "visitors": 2000,
                        "seconds": 600, "onsale_second": 300, "bot_share": 0.1,
                        "bot_devices": 4})
        assert r.status_code == 200, r.text
        doc = r.json()
        s = doc["scenario"]
        assert (s["seats"], s["tickets_per_account"], s["active_cap"]) == (150, 3, 40)
        assert (s["rate_min"], s["rate_max"], s["people"]) == (30, 90, 2000)
        assert set(doc["policies"]) == {"fifo", "random"}
        for result in doc["policies"].values():
            assert result["totals"]["seats_sold"] == 150
            assert result["cohorts"] and result["wait_histogram"]["counts"]
        bad = await post({"arrivals": [1, -2]})
        assert bad.status_code == 400
        assert bad.headers["content-type"] == "application/problem+json"
        assert (bad.json()["code"], bad.json()["field"]) == ("invalid_request", "arrivals")
        unknown = await post({"event_id": 999999, "preset": "flat"})
        assert (unknown.status_code, unknown.json()["code"]) == (404, "event_not_found")
        huge = await post({"event_id": 2**64, "preset": "flat"})  # past bigint: the schema's
        assert (huge.status_code, huge.json()["code"], huge.json()["field"]) \
            == (400, "invalid_request", "event_id")
        not_a_number = await post({"event_id": "one"})
        assert not_a_number.json()["field"] == "event_id"
        state: OpsState = api.app.state.edge.ops
        async with state.simulating:    # another simulation is running
            busy = await post({"preset": "flat", "visitors": 10})
        assert (busy.status_code, busy.json()["code"]) == (429, "rate_limited")
        assert busy.headers["retry-after"] == "1"
