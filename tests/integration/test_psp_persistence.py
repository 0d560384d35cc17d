"""A restart with the same data directory keeps intents, idempotency keys and the
webhook queue; deliveries cut short by the stop resume."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from onsale.psp.app import build_psp_app
from onsale.psp.config import PspConfig
from onsale.psp.testing import eventually

KEY = "sk_test_psp_0123456789"
SIM = {"Authorization": "Bearer sim_test_0123456789abcdef"}
BODY = {"amount": "4200", "currency": "usd", "payment_method": "pm_card_visa",
        "capture_method": "manual", "confirm": "true",
        "metadata[order_id]": "o-1", "metadata[operation_id]": "op-restart"}

Handler = Callable[[httpx.Request], Coroutine[None, None, httpx.Response]]


@asynccontextmanager
async def running(data_dir: Path, handler: Handler) -> AsyncIterator[httpx.AsyncClient]:
    config = PspConfig(secret_key=KEY, sim_key=SIM["Authorization"][7:], data_dir=data_dir, webhook_url="http://hooks.test/hook",
                       webhook_secret="whsec_test", webhook_backoff_base=0.01)
    app = build_psp_app(config, webhook_transport=httpx.MockTransport(handler))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://psp.test",
                                     headers={"Authorization": f"Bearer {KEY}"}) as http:
            yield http


async def test_restart_keeps_intents_keys_and_the_webhook_queue(tmp_path: Path) -> None:
    stuck = asyncio.Event()
    seen: list[dict[str, Any]] = []

    async def hang(request: httpx.Request) -> httpx.Response:
        stuck.set()
        await asyncio.Event().wait()  # the endpoint never answers
        raise AssertionError("unreachable")

    async def accept(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(204)

    async with running(tmp_path, hang) as http:
        created = await http.post("/v1/payment_intents", data=BODY,
                                  headers={"Idempotency-Key": "op-restart"})
        assert created.status_code == 200
        intent = created.json()
        await eventually(stuck.is_set)  # the first delivery is in flight...
        await http.put("/_sim/faults", json={"webhooks": {"paused": True}}, headers=SIM)
        voided = await http.post(f"/v1/payment_intents/{intent['id']}/cancel",
                                 headers={"Idempotency-Key": "void-1"})
        assert voided.status_code == 200  # ...and the second is held back by the pause
    # stopped: one delivery cut short, one never started; faults are not persisted

    async with running(tmp_path, accept) as http:
        again = await http.get(f"/v1/payment_intents/{intent['id']}")
        assert again.json()["status"] == "canceled"
        replay = await http.post("/v1/payment_intents", data=BODY,
                                 headers={"Idempotency-Key": "op-restart"})
        assert replay.headers["idempotent-replayed"] == "true"
        assert replay.content == created.content
        conflict = await http.post("/v1/payment_intents", data={**BODY, "amount": "1"},
                                   headers={"Idempotency-Key": "op-restart"})
        assert conflict.json()["error"]["code"] == "idempotency_key_in_use"
        await eventually(lambda: len(seen) == 2)
        assert sorted(e["type"] for e in seen) == ["payment_intent.amount_capturable_updated",
                                                   "payment_intent.canceled"]
        await eventually(lambda: _settled(http))
        rows = (await http.get("/_sim/webhooks", headers=SIM)).json()["data"]
        assert {(r["state"], r["last_status"]) for r in rows} == {("delivered", 204)}
        stats = (await http.get("/_sim/stats", headers=SIM)).json()
        assert stats["intents_by_status"] == {"canceled": 1}


async def _settled(http: httpx.AsyncClient) -> bool:
    rows = (await http.get("/_sim/webhooks", headers=SIM)).json()["data"]
    return all(r["state"] == "delivered" for r in rows)
