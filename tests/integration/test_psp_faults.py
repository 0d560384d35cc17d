"""Each fault kind against the simulator on a real socket: what the client sees,
and that the operation happened (or not) behind it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import stripe

from onsale.psp.app import build_psp_app
from onsale.psp.config import PspConfig
from onsale.psp.testing import ThreadedServer, reserve_socket
from tests.psp_support import AUTH, KEY, SIM_AUTH, SIM_KEY, form


class Client:
    def __init__(self, http: httpx.AsyncClient, sim: httpx.AsyncClient) -> None:
        self.http = http
        self.url = str(http.base_url).rstrip("/")
        self.sim = sim  # /_sim/*, with the sim key

    async def faults(self, *rules: dict[str, Any]) -> dict[str, Any]:
        r = await self.sim.put("/_sim/faults", json={"rules": list(rules)})
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()
        return data

    async def authorize(self, key: str, read_timeout: float | None = None) -> httpx.Response:
        body = {"amount": 1000, "currency": "usd", "payment_method": "pm_card_visa",
                "capture_method": "manual", "confirm": True,
                "metadata": {"order_id": "o-1", "operation_id": key}}
        extra: dict[str, Any] = {"timeout": read_timeout} if read_timeout else {}
        return await self.http.post("/v1/payment_intents", data=dict(form(body)),
                                    headers={"Idempotency-Key": key}, **extra)

    async def found(self, key: str) -> list[dict[str, Any]]:
        r = await self.http.get("/v1/payment_intents/search",
                                params={"query": f"metadata['operation_id']:'{key}'"})
        assert r.status_code == 200, r.text
        data: list[dict[str, Any]] = r.json()["data"]
        return data


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    sock = reserve_socket()
    app = build_psp_app(PspConfig(secret_key=KEY, sim_key=SIM_KEY, data_dir=tmp_path))
    with ThreadedServer(app, sock) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10, headers=AUTH) as http, \
                httpx.AsyncClient(base_url=url, timeout=10, headers=SIM_AUTH) as sim:
            yield Client(http, sim)


async def test_latency_delays_then_processes(client: Client) -> None:
    await client.faults({"op": "authorize", "fault": "latency", "ms": 50, "count": 1})
    r = await client.authorize("op-slow")
    assert r.status_code == 200
    assert len(await client.found("op-slow")) == 1
    state = (await client.sim.get("/_sim/faults")).json()
    assert state["rules"][0]["remaining"] == 0


async def test_timeout_processes_but_answers_too_late(client: Client) -> None:
    await client.faults({"op": "authorize", "fault": "timeout", "ms": 3000, "count": 1})
    with pytest.raises(httpx.ReadTimeout):
        await client.authorize("op-timeout", read_timeout=0.3)
    [intent] = await client.found("op-timeout")  # it was authorized all the same
    assert intent["status"] == "requires_capture"
    retry = await client.authorize("op-timeout")
    assert retry.status_code == 200
    assert retry.headers["idempotent-replayed"] == "true"
    assert retry.json()["id"] == intent["id"]


async def test_timeout_answers_a_patient_client(client: Client) -> None:
    await client.faults({"op": "retrieve", "fault": "timeout", "ms": 100, "count": 1})
    intent = (await client.authorize("op-patient")).json()
    r = await client.http.get(f"/v1/payment_intents/{intent['id']}")
    assert (r.status_code, r.json()["id"]) == (200, intent["id"])


async def test_lost_response_closes_the_connection_after_processing(client: Client) -> None:
    await client.faults({"op": "authorize", "fault": "lost_response", "count": 1})
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        await client.authorize("op-lost")
    [intent] = await client.found("op-lost")
    retry = await client.authorize("op-lost")
    assert (retry.status_code, retry.headers["idempotent-replayed"]) == (200, "true")
    assert retry.json()["id"] == intent["id"]


async def test_lost_capture_response(client: Client) -> None:
    intent = (await client.authorize("op-cap")).json()
    await client.faults({"op": "capture", "fault": "lost_response", "count": 1})
    path = f"/v1/payment_intents/{intent['id']}/capture"
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        await client.http.post(path, headers={"Idempotency-Key": "cap-1"})
    r = await client.http.get(f"/v1/payment_intents/{intent['id']}")
    assert r.json()["status"] == "succeeded"
    retry = await client.http.post(path, headers={"Idempotency-Key": "cap-1"})
    assert (retry.status_code, retry.json()["status"]) == (200, "succeeded")


async def test_error_500_does_not_process(client: Client) -> None:
    await client.faults({"op": "*", "fault": "error_500", "count": 2})
    r = await client.authorize("op-500")
    assert r.status_code == 500
    assert r.json()["error"]["type"] == "api_error"
    r = await client.http.get("/v1/payment_intents/search",
                              params={"query": "metadata['operation_id']:'op-500'"})
    assert r.status_code == 500  # the second and last one
    assert await client.found("op-500") == []
    retry = await client.authorize("op-500")
    assert retry.status_code == 200 and "idempotent-replayed" not in retry.headers


async def test_rules_apply_only_to_their_operation_and_probability(client: Client) -> None:
    await client.faults({"op": "cancel", "fault": "error_500"},
                        {"op": "authorize", "fault": "error_500", "probability": 0.0})
    for n in range(3):
        assert (await client.authorize(f"op-{n}")).status_code == 200
    intent = (await client.authorize("op-void")).json()
    for _ in range(2):  # count null: every matching request
        r = await client.http.post(f"/v1/payment_intents/{intent['id']}/cancel",
                                   headers={"Idempotency-Key": uuid.uuid4().hex})
        assert r.status_code == 500
    state = (await client.sim.get("/_sim/faults")).json()
    assert [rule["remaining"] for rule in state["rules"]] == [None, None]
    await client.sim.delete("/_sim/faults")
    r = await client.http.post(f"/v1/payment_intents/{intent['id']}/cancel",
                               headers={"Idempotency-Key": uuid.uuid4().hex})
    assert r.json()["status"] == "canceled"


async def test_unauthenticated_requests_do_not_spend_faults(client: Client) -> None:
    await client.faults({"op": "authorize", "fault": "error_500", "count": 1})
    r = await client.http.post("/v1/payment_intents",
                               headers={"Authorization": "Bearer sk_test_nope_nope_nope"})
    assert r.status_code == 401
    assert (await client.authorize("op-auth")).status_code == 500


async def test_concurrent_duplicates_over_sockets_create_one_intent(client: Client) -> None:
    await client.faults({"op": "authorize", "fault": "latency", "ms": 20})
    answers = await asyncio.gather(*(client.authorize("op-burst") for _ in range(20)))
    assert {r.status_code for r in answers} == {200}
    assert len({r.json()["id"] for r in answers}) == 1
    assert len(await client.found("op-burst")) == 1
    stats = (await client.sim.get("/_sim/stats")).json()
    assert stats["duplicate_operation_ids"] == []
    assert stats["authorizations"] == 1


@pytest.mark.parametrize("fault", [{"fault": "lost_response"},
                                   {"fault": "timeout", "ms": 3000}])
async def test_the_sdk_sees_a_lost_answer_and_its_retry_is_replayed(
        client: Client, fault: dict[str, Any]) -> None:
    """What core's provider meets: the SDK raises APIConnectionError (no automatic
    retry here), the intent exists all the same, and the same Idempotency-Key
    returns it."""
    sdk = stripe.StripeClient(KEY, base_addresses={"api": client.url},
                              http_client=stripe.HTTPXClient(timeout=0.5),
                              max_network_retries=0)
    await client.faults({"op": "authorize", "count": 1, **fault})
    params: Any = {
        "amount": 1000, "currency": "usd", "payment_method": "pm_card_visa",
        "capture_method": "manual", "confirm": True,
        "metadata": {"operation_id": "op-sdk"}}
    with pytest.raises(stripe.APIConnectionError):
        await sdk.v1.payment_intents.create_async(
            params=params, options={"idempotency_key": "op-sdk"})
    [intent] = await client.found("op-sdk")
    again = await sdk.v1.payment_intents.create_async(
        params=params, options={"idempotency_key": "op-sdk"})
    assert again.id == intent["id"] and again.status == "requires_capture"
    assert again.last_response is not None
    assert again.last_response.headers.get("idempotent-replayed") == "true"
