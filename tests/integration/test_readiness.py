"""``/readyz`` asks each dependency now (onsale/readiness.py): the edge is taken out of
rotation while Valkey does not answer and back when it does; core stays ready without
Valkey or the provider but says it is degraded, and names which."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import httpx

from onsale.compose import Tiers, app_for
from onsale.embedded import free_port, start_valkey
from tests.conftest import make_settings
from tests.stack import PSP_KEY, PSP_PUBLISHABLE, WEBHOOK_SECRET


async def test_the_edge_is_not_ready_without_valkey_and_core_says_what_is_down(
        db_url: str) -> None:
    valkey = start_valkey(Path(tempfile.mkdtemp(prefix="onsale-test-ready-")), persist=False)
    try:
        settings = make_settings(
            db_url, redis_url=valkey.url, redis_timeout=0.3, redis_pool_wait=0.3,
            stripe_api_base=f"http://127.0.0.1:{free_port()}",  # nothing listens there
            stripe_secret_key=PSP_KEY, stripe_publishable_key=PSP_PUBLISHABLE,
            stripe_webhook_secret=WEBHOOK_SECRET)
        edge, core = app_for(Tiers(edge=True), settings), app_for(Tiers(core=True), settings)
        async with edge.router.lifespan_context(edge), core.router.lifespan_context(core):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=edge),
                                         base_url="http://t") as e, \
                    httpx.AsyncClient(transport=httpx.ASGITransport(app=core),
                                      base_url="http://t") as c:
                up = await e.get("/readyz")
                assert (up.status_code, up.json()["status"]) == (200, "ready"), up.text
                assert up.json()["checks"]["valkey"] == "ok"
                core_up = await c.get("/readyz")
                assert core_up.status_code == 200
                assert core_up.json() == {"status": "degraded", "checks": {
                    "database": "ok", "valkey": "ok", "provider": "unavailable"}}

                valkey.stop()
                down = await e.get("/readyz")
                assert down.status_code == 503, down.text
                assert down.headers["content-type"] == "application/problem+json"
                assert down.json()["code"] == "queue_unavailable"
                assert down.json()["checks"]["valkey"] == "unavailable"
                core_down = await c.get("/readyz")
                assert core_down.status_code == 200  # it still sells what needs no Valkey
                assert core_down.json()["checks"]["valkey"] == "unavailable"

                valkey = start_valkey(valkey.data_dir, valkey.port, persist=False)
                back = None
                for _ in range(50):  # the breaker lets a probe through within its backoff
                    back = await e.get("/readyz")
                    if back.status_code == 200:
                        break
                    await asyncio.sleep(0.2)
                assert back is not None and back.status_code == 200, back.text if back else None
    finally:
        valkey.stop()
