"""The simulator's API in-process (httpx ASGITransport), spoken by hand in Stripe's
wire format (form bodies with bracket notation, ``Bearer sk_…``): cards, 3-D Secure,
capture, void, lapse, idempotency, search and the /_sim views, on a fake clock.
Webhooks go to an httpx.MockTransport here; tests/integration/test_psp_webhooks.py
uses real sockets and tests/integration/test_psp_stripe_sdk.py the official SDK."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from onsale.psp import idempotency
from onsale.psp.app import build_psp_app
from onsale.psp.config import PspConfig
from onsale.psp.form import parse
from onsale.psp.middleware import ResponseLost
from onsale.psp.testing import FakeClock, eventually
from tests.psp_support import (
    AUTH,
    FORM,
    KEY,
    PUBLISHABLE,
    SECRET,
    SIM_AUTH,
    SIM_KEY,
    card,
    encoded,
    form,
)

WINDOW = 100.0
RETENTION = 1000.0


class Psp:
    def __init__(self, app: Any, clock: FakeClock, hooks: list[dict[str, Any]]) -> None:
        self.app = app
        self.clock = clock
        self.hooks = hooks
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                      base_url="http://psp.test", headers=AUTH)
        self.sim = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://psp.test", headers=SIM_AUTH)

    async def tokenize(self, number: str) -> str:
        r = await self.http.post("/v1/payment_methods", data=dict(form(card(number))),
                                 headers={"Authorization": f"Bearer {PUBLISHABLE}"})
        assert r.status_code == 200, r.text
        method: str = r.json()["id"]
        return method

    async def create(self, payment_method: str = "pm_card_visa", *, key: str | None = None,
                     **body: Any) -> httpx.Response:
        operation = key or str(uuid.uuid4())
        if payment_method.replace(" ", "").isdigit():  # a card number: tokenize it first
            payment_method = await self.tokenize(payment_method)
        payload = {"amount": 5000, "currency": "usd", "payment_method": payment_method,
                   "capture_method": "manual", "confirm": True,
                   "metadata": {"order_id": "order-1", "operation_id": operation}, **body}
        return await self.http.post("/v1/payment_intents", data=dict(form(payload)),
                                    headers={"Idempotency-Key": operation})

    async def post(self, path: str, body: dict[str, Any] | None = None,
                   key: str | None = None) -> httpx.Response:
        return await self.http.post(path, data=dict(form(body or {})),
                                    headers={"Idempotency-Key": key or uuid.uuid4().hex})

    async def intent(self, intent_id: str) -> dict[str, Any]:
        r = await self.http.get(f"/v1/payment_intents/{intent_id}")
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()
        return data

    async def search(self, key: str, value: str) -> list[dict[str, Any]]:
        r = await self.http.get("/v1/payment_intents/search",
                                params={"query": f"metadata['{key}']:'{value}'"})
        assert r.status_code == 200, r.text
        assert r.json()["object"] == "search_result"
        data: list[dict[str, Any]] = r.json()["data"]
        return data

    def events(self, intent_id: str) -> list[str]:
        return [e["type"] for e in self.hooks if e["data"]["object"]["id"] == intent_id]


@pytest.fixture
async def psp(tmp_path: Path) -> AsyncIterator[Psp]:
    hooks: list[dict[str, Any]] = []

    def receive(request: httpx.Request) -> httpx.Response:
        hooks.append(json.loads(request.content))
        return httpx.Response(200)

    config = PspConfig(secret_key=KEY, publishable_key=PUBLISHABLE, sim_key=SIM_KEY,
                       data_dir=tmp_path, webhook_url="http://hooks.test/hook",
                       webhook_secret=SECRET, public_url="http://psp.test",
                       auth_window_seconds=WINDOW, idempotency_retention_seconds=RETENTION,
                       sweep_interval=0.05, webhook_backoff_base=0.01)
    clock = FakeClock()
    app = build_psp_app(config, clock=clock, webhook_transport=httpx.MockTransport(receive))
    async with app.router.lifespan_context(app):
        psp = Psp(app, clock, hooks)
        async with psp.http, psp.sim:
            yield psp


async def test_health_needs_no_auth_but_the_api_does(psp: Psp) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=psp.app),
                                 base_url="http://psp.test") as anonymous:
        assert (await anonymous.get("/healthz")).json() == {"status": "ok"}
        for headers in ({}, {"Authorization": "Bearer sk_test_wrong_0123456789"},
                        {"Authorization": KEY}, {"Authorization": f"Bearer {SIM_KEY}"}):
            for method, path in (("POST", "/v1/payment_intents"),
                                 ("GET", "/v1/payment_intents/pi_x"),
                                 ("GET", "/v1/payment_intents/search")):
                r = await anonymous.request(method, path, headers=headers)
                assert r.status_code == 401, (method, path)
                assert r.json()["error"]["type"] == "authentication_error"
                assert r.json()["error"]["message"]
        for headers in ({}, AUTH, {"Authorization": f"Bearer {PUBLISHABLE}"}):
            for path in ("/_sim/faults", "/_sim/stats"):
                assert (await anonymous.get(path, headers=headers)).status_code == 401
        # the publishable key tokenizes and does nothing else
        public = {"Authorization": f"Bearer {PUBLISHABLE}"}
        refused = await anonymous.get("/v1/payment_intents/pi_x", headers=public)
        assert (refused.status_code, refused.json()["error"]["code"]) == (
            401, "secret_key_required")


async def test_approved_card_authorizes(psp: Psp) -> None:
    r = await psp.create("4242 4242 4242 4242", key="op-visa")
    assert r.status_code == 200, r.text
    intent = r.json()
    assert intent["id"].startswith("pi_") and len(intent["id"]) == 27
    assert intent["payment_method"].startswith("pm_")
    assert {k: intent[k] for k in ("object", "amount", "currency", "status", "capture_method",
                                   "amount_capturable", "amount_received",
                                   "last_payment_error", "next_action", "cancellation_reason",
                                   "metadata", "livemode")} == {
        "object": "payment_intent", "amount": 5000, "currency": "usd",
        "status": "requires_capture", "capture_method": "manual", "amount_capturable": 5000,
        "amount_received": 0, "last_payment_error": None,
        "next_action": None, "cancellation_reason": None,
        "metadata": {"order_id": "order-1", "operation_id": "op-visa"}, "livemode": False}
    assert intent["created"] == int(psp.clock.now)
    assert await psp.intent(intent["id"]) == intent
    method = (await psp.http.get(f"/v1/payment_methods/{intent['payment_method']}")).json()
    assert (method["card"]["brand"], method["card"]["last4"]) == ("visa", "4242")
    await eventually(lambda: psp.events(intent["id"]))
    assert psp.events(intent["id"]) == ["payment_intent.amount_capturable_updated"]


@pytest.mark.parametrize("method, code, decline_code", [
    ("4000000000000002", "card_declined", "generic_decline"),
    ("pm_card_chargeDeclined", "card_declined", "generic_decline"),
    ("4000000000009995", "card_declined", "insufficient_funds"),
    ("pm_card_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"),
    ("4000000000000069", "expired_card", "expired_card"),
])
async def test_declined_cards(psp: Psp, method: str, code: str,
                              decline_code: str | None) -> None:
    r = await psp.create(method)
    assert r.status_code == 402, r.text
    error = r.json()["error"]
    assert (error["type"], error["code"], error.get("decline_code")) == (
        "card_error", code, decline_code)
    intent = error["payment_intent"]
    assert intent["status"] == "requires_payment_method"
    assert intent["last_payment_error"]["code"] == code
    assert intent["last_payment_error"]["decline_code"] == decline_code
    assert await psp.intent(intent["id"]) == intent
    await eventually(lambda: psp.events(intent["id"]))
    assert psp.events(intent["id"]) == ["payment_intent.payment_failed"]


async def test_an_incorrect_number_is_refused_at_tokenization(psp: Psp) -> None:
    r = await psp.http.post("/v1/payment_methods", data=dict(form(card("4242424242424241"))))
    assert r.status_code == 402
    error = r.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "card_error", "incorrect_number", "card[number]")
    assert (await psp.sim.get("/_sim/stats")).json()["intents"] == 0


async def test_other_luhn_valid_numbers_approve(psp: Psp) -> None:
    for number in ("5555555555554444", "pm_card_mastercard", "378282246310005"):
        r = await psp.create(number)
        assert r.status_code == 200 and r.json()["status"] == "requires_capture", r.text


@pytest.mark.parametrize("change, param, code", [
    ({"amount": 0}, "amount", "parameter_invalid"),
    ({"amount": "50.00"}, "amount", "parameter_invalid"),
    ({"amount": None}, "amount", "parameter_missing"),
    ({"currency": "gbp"}, "currency", "parameter_invalid"),
    ({"currency": None}, "currency", "parameter_missing"),
    ({"payment_method": "card_4242"}, "payment_method", "parameter_invalid"),
    ({"capture_method": "automatic"}, "capture_method", "parameter_invalid"),
    ({"shipping": "x"}, "shipping", "parameter_unknown"),
])
async def test_malformed_bodies(psp: Psp, change: dict[str, Any], param: str,
                                code: str) -> None:
    r = await psp.create(**change)
    assert r.status_code == 400
    assert {k: r.json()["error"][k] for k in ("type", "code", "param")} == {
        "type": "invalid_request_error", "code": code, "param": param}


async def test_an_unknown_payment_method_is_missing(psp: Psp) -> None:
    r = await psp.create("pm_card_nope")
    assert r.status_code == 404
    assert (r.json()["error"]["code"], r.json()["error"]["param"]) == (
        "resource_missing", "payment_method")
    assert (await psp.sim.get("/_sim/stats")).json()["intents"] == 0


async def test_json_bodies_are_refused_and_the_key_is_optional(psp: Psp) -> None:
    r = await psp.http.post("/v1/payment_intents", json={"amount": 5000},
                            headers={"Idempotency-Key": "k"})
    assert (r.status_code, r.json()["error"]["type"]) == (400, "invalid_request_error")
    assert "form" in r.json()["error"]["message"]
    # without an Idempotency-Key a write is simply done (twice if sent twice)
    body = dict(form({"amount": 5000, "currency": "usd", "payment_method": "pm_card_visa",
                      "capture_method": "manual", "confirm": True,
                      "metadata": {"operation_id": "op-nokey"}}))
    first = await psp.http.post("/v1/payment_intents", data=body)
    second = await psp.http.post("/v1/payment_intents", data=body)
    assert (first.status_code, second.status_code) == (200, 200)
    assert first.json()["id"] != second.json()["id"]
    assert "idempotent-replayed" not in second.headers
    assert len(await psp.search("operation_id", "op-nokey")) == 2


async def test_three_d_secure_succeed_redirects_to_the_return_url(psp: Psp) -> None:
    r = await psp.create("pm_card_threeDSecureRequired",
                         return_url="https://shop.test/return?order=1")
    intent = r.json()
    assert (r.status_code, intent["status"]) == (200, "requires_action")
    url = intent["next_action"]["redirect_to_url"]["url"]
    assert url == f"http://psp.test/3ds/{intent['id']}"
    assert intent["next_action"]["redirect_to_url"]["return_url"] == \
        "https://shop.test/return?order=1"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=psp.app)) as browser:
        page = await browser.get(url)
        assert page.status_code == 200
        assert "Complete authentication" in page.text and "Fail authentication" in page.text
        done = await browser.post(url, data={"result": "succeed"})
        assert done.status_code == 303
        assert done.headers["location"] == \
            f"https://shop.test/return?order=1&payment_intent={intent['id']}"
        again = await browser.post(url, data={"result": "fail"})  # already answered
        assert (again.status_code, again.headers["location"]) == (303, done.headers["location"])
        assert "requires_capture" in (await browser.get(url)).text
    after = await psp.intent(intent["id"])
    assert (after["status"], after["amount_capturable"], after["next_action"]) == (
        "requires_capture", 5000, None)
    assert (await psp.post(f"/v1/payment_intents/{intent['id']}/capture")).status_code == 200
    await eventually(lambda: len(psp.events(intent["id"])) == 3)
    assert psp.events(intent["id"]) == ["payment_intent.requires_action",
                                        "payment_intent.amount_capturable_updated",
                                        "payment_intent.succeeded"]


async def test_three_d_secure_fail_without_return_url(psp: Psp) -> None:
    intent = (await psp.create("4000002760003184")).json()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=psp.app),
                                 base_url="http://psp.test") as browser:
        bad = await browser.post(f"/3ds/{intent['id']}", data={"result": "maybe"})
        assert bad.status_code == 400
        done = await browser.post(f"/3ds/{intent['id']}", data={"result": "fail"})
        assert done.status_code == 200
        assert "requires_payment_method" in done.text
        missing = await browser.get("/3ds/pi_000000000000000000000000")
        assert missing.status_code == 404
    after = await psp.intent(intent["id"])
    assert after["status"] == "requires_payment_method"
    assert after["last_payment_error"]["code"] == "payment_intent_authentication_failure"
    await eventually(lambda: len(psp.events(intent["id"])) == 2)
    assert psp.events(intent["id"]) == ["payment_intent.requires_action",
                                        "payment_intent.payment_failed"]


async def test_capture(psp: Psp) -> None:
    intent = (await psp.create()).json()
    path = f"/v1/payment_intents/{intent['id']}/capture"
    r = await psp.post(path, key="cap-1")
    assert r.status_code == 200
    assert {k: r.json()[k] for k in ("status", "amount_received", "amount_capturable")} == {
        "status": "succeeded", "amount_received": 5000, "amount_capturable": 0}
    replay = await psp.post(path, key="cap-1")
    assert (replay.status_code, replay.headers["idempotent-replayed"]) == (200, "true")
    assert replay.content == r.content
    second = await psp.post(path, key="cap-2")
    assert second.status_code == 400
    assert second.json()["error"]["code"] == "payment_intent_unexpected_state"
    assert second.json()["error"]["payment_intent"]["status"] == "succeeded"
    voided = await psp.post(f"/v1/payment_intents/{intent['id']}/cancel")
    assert voided.status_code == 400
    assert voided.json()["error"]["code"] == "payment_intent_unexpected_state"


async def test_capture_amounts_and_wrong_states(psp: Psp) -> None:
    intent = (await psp.create()).json()
    path = f"/v1/payment_intents/{intent['id']}/capture"
    too_much = await psp.post(path, {"amount_to_capture": 5001}, key="cap")
    assert (too_much.status_code, too_much.json()["error"]["param"]) == (400,
                                                                         "amount_to_capture")
    partial = await psp.post(path, {"amount_to_capture": 4000}, key="cap")  # key not kept
    assert (partial.status_code, partial.json()["amount_received"]) == (200, 4000)
    declined = (await psp.create("4000000000000002")).json()["error"]["payment_intent"]
    r = await psp.post(f"/v1/payment_intents/{declined['id']}/capture")
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "payment_intent_unexpected_state"
    assert r.json()["error"]["payment_intent"]["id"] == declined["id"]
    missing = await psp.post("/v1/payment_intents/pi_000000000000000000000000/capture")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "resource_missing")
    r = await psp.http.get("/v1/payment_intents/pi_000000000000000000000000")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "resource_missing")


@pytest.mark.parametrize("method", ["pm_card_visa", "pm_card_threeDSecureRequired",
                                    "pm_card_chargeDeclined"])
async def test_void(psp: Psp, method: str) -> None:
    r = await psp.create(method)
    intent = r.json() if r.status_code == 200 else r.json()["error"]["payment_intent"]
    path = f"/v1/payment_intents/{intent['id']}/cancel"
    voided = await psp.post(path)
    assert voided.status_code == 200, voided.text
    assert {k: voided.json()[k] for k in ("status", "cancellation_reason", "amount_capturable",
                                          "next_action")} == {
        "status": "canceled", "cancellation_reason": "requested_by_customer",
        "amount_capturable": 0, "next_action": None}
    again = await psp.post(path)
    assert (again.status_code, again.json()["error"]["code"]) == (
        400, "payment_intent_unexpected_state")
    capture = await psp.post(f"/v1/payment_intents/{intent['id']}/capture")
    assert capture.status_code == 400
    await eventually(lambda: "payment_intent.canceled" in psp.events(intent["id"]))


async def test_cancel_with_a_reason(psp: Psp) -> None:
    intent = (await psp.create()).json()
    path = f"/v1/payment_intents/{intent['id']}/cancel"
    bad = await psp.post(path, {"cancellation_reason": "automatic"})
    assert (bad.status_code, bad.json()["error"]["param"]) == (400, "cancellation_reason")
    r = await psp.post(path, {"cancellation_reason": "abandoned"})
    assert r.json()["cancellation_reason"] == "abandoned"


async def test_authorization_lapses_lazily_then_capture_is_refused(psp: Psp) -> None:
    intent = (await psp.create()).json()
    psp.clock.advance(WINDOW - 1)
    assert (await psp.intent(intent["id"]))["status"] == "requires_capture"
    psp.clock.advance(1)
    r = await psp.post(f"/v1/payment_intents/{intent['id']}/capture")
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "payment_intent_unexpected_state"
    assert (error["payment_intent"]["status"],
            error["payment_intent"]["cancellation_reason"]) == ("canceled", "automatic")
    assert (await psp.intent(intent["id"]))["status"] == "canceled"
    await eventually(lambda: len(psp.events(intent["id"])) == 2)
    assert psp.events(intent["id"]) == ["payment_intent.amount_capturable_updated",
                                        "payment_intent.canceled"]
    canceled = [e for e in psp.hooks if e["type"] == "payment_intent.canceled"]
    assert canceled[0]["data"]["object"]["cancellation_reason"] == "automatic"


async def test_background_sweep_lapses_and_emits(psp: Psp) -> None:
    intent = (await psp.create()).json()
    psp.clock.advance(WINDOW + 1)
    # Nothing reads the intent: the sweeper alone cancels it and sends the event.
    await eventually(lambda: "payment_intent.canceled" in psp.events(intent["id"]))
    assert (await psp.intent(intent["id"]))["cancellation_reason"] == "automatic"


async def test_idempotent_replay_and_conflicts(psp: Psp) -> None:
    first = await psp.create(key="op-same")
    replay = await psp.create(key="op-same")
    assert replay.status_code == 200
    assert replay.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert replay.content == first.content
    # the same parameters in another order are the same request
    pairs = form({"amount": 5000, "currency": "usd", "payment_method": "pm_card_visa",
                  "capture_method": "manual", "confirm": True,
                  "metadata": {"order_id": "order-1", "operation_id": "op-same"}})
    reordered = await psp.http.post("/v1/payment_intents", content=encoded(dict(
        reversed(pairs))), headers={"Idempotency-Key": "op-same", **FORM})
    assert reordered.headers.get("idempotent-replayed") == "true", reordered.text
    conflict = await psp.create(key="op-same", amount=5001)
    assert conflict.status_code == 400
    assert {k: conflict.json()["error"][k] for k in ("type", "code")} == {
        "type": "idempotency_error", "code": "idempotency_key_in_use"}
    other_path = await psp.post(f"/v1/payment_intents/{first.json()['id']}/cancel",
                                key="op-same")
    assert other_path.json()["error"]["code"] == "idempotency_key_in_use"
    assert len(await psp.search("operation_id", "op-same")) == 1
    assert (await psp.intent(first.json()["id"]))["status"] == "requires_capture"


async def test_declines_are_replayed_too(psp: Psp) -> None:
    first = await psp.create("pm_card_chargeDeclinedInsufficientFunds", key="op-declined")
    replay = await psp.create("pm_card_chargeDeclinedInsufficientFunds", key="op-declined")
    assert (replay.status_code, replay.headers["idempotent-replayed"]) == (402, "true")
    assert replay.content == first.content


async def test_keys_expire_after_the_retention(psp: Psp) -> None:
    first = await psp.create(key="op-old")
    psp.clock.advance(RETENTION - 1)
    kept = await psp.create(key="op-old", amount=700)
    assert kept.status_code == 400 and kept.json()["error"]["type"] == "idempotency_error"
    psp.clock.advance(1)
    reused = await psp.create(key="op-old", amount=700)
    assert reused.status_code == 200 and "idempotent-replayed" not in reused.headers
    assert reused.json()["id"] != first.json()["id"]


async def test_concurrent_duplicates_create_exactly_one_intent(psp: Psp) -> None:
    answers = await asyncio.gather(*(psp.create(key="op-burst") for _ in range(20)))
    assert {r.status_code for r in answers} == {200}
    assert len({r.json()["id"] for r in answers}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in answers) == 19
    assert len(await psp.search("operation_id", "op-burst")) == 1
    stats = (await psp.sim.get("/_sim/stats")).json()
    assert (stats["authorizations"], stats["duplicate_operation_ids"]) == (1, [])


async def test_search(psp: Psp) -> None:
    a = (await psp.create(key="op-a")).json()
    await psp.create(key="op-b", metadata={"order_id": "order-9", "operation_id": "op-b"})
    assert [i["id"] for i in await psp.search("operation_id", "op-a")] == [a["id"]]
    assert await psp.search("operation_id", "op-none") == []
    assert len(await psp.search("order_id", "order-1")) == 1
    r = await psp.http.get("/v1/payment_intents/search",
                           params={"query": 'metadata["operation_id"]:"op-a"'})
    assert [i["id"] for i in r.json()["data"]] == [a["id"]]
    assert r.json()["has_more"] is False
    for query in ("status:'succeeded'", "metadata['operation_id']:op-a", ""):
        bad = await psp.http.get("/v1/payment_intents/search", params={"query": query})
        assert (bad.status_code, bad.json()["error"]["param"]) == (400, "query")


async def test_sim_views(psp: Psp) -> None:
    ok = (await psp.create(key="op-1")).json()
    await psp.create("pm_card_chargeDeclined", key="op-2")
    await psp.post(f"/v1/payment_intents/{ok['id']}/capture")
    stats = (await psp.sim.get("/_sim/stats")).json()
    assert stats["intents_by_status"] == {"succeeded": 1, "requires_payment_method": 1}
    assert (stats["intents"], stats["authorizations"], stats["captures"]) == (2, 1, 1)
    assert stats["captured_amount"] == {"usd": 5000}
    assert stats["duplicate_operation_ids"] == []
    listed = (await psp.sim.get("/_sim/intents", params={
        "metadata_key": "operation_id", "metadata_value": "op-1"})).json()
    assert [i["id"] for i in listed["data"]] == [ok["id"]]
    everything = (await psp.sim.get("/_sim/intents", params={"limit": "10"})).json()
    assert len(everything["data"]) == 2
    assert (await psp.sim.get("/_sim/intents", params={"metadata_key": "x"})).status_code == 400
    await eventually(lambda: len(psp.hooks) == 3)
    await eventually(lambda: _all_delivered(psp))
    webhooks = (await psp.sim.get("/_sim/webhooks")).json()["data"]
    assert [w["type"] for w in webhooks] == ["payment_intent.succeeded",
                                             "payment_intent.payment_failed",
                                             "payment_intent.amount_capturable_updated"]
    assert {(w["state"], w["attempts"], w["last_status"]) for w in webhooks} == {
        ("delivered", 1, 200)}


async def _all_delivered(psp: Psp) -> bool:
    data = (await psp.sim.get("/_sim/webhooks")).json()["data"]
    return all(w["state"] == "delivered" for w in data)


async def test_faults_api(psp: Psp) -> None:
    empty = (await psp.sim.get("/_sim/faults")).json()
    assert empty["rules"] == [] and empty["webhooks"]["paused"] is False
    body = {"rules": [{"op": "capture", "fault": "error_500", "count": 1}],
            "webhooks": {"fail_first": 1}}
    put = await psp.sim.put("/_sim/faults", json=body)
    assert put.status_code == 200
    assert put.json()["rules"][0]["remaining"] == 1
    bad = await psp.sim.put("/_sim/faults", json={"rules": [{"op": "x", "fault": "latency"}]})
    assert (bad.status_code, bad.json()["error"]["param"]) == (400, "rules[0].op")
    assert (await psp.sim.get("/_sim/faults")).json()["rules"][0]["remaining"] == 1
    cleared = await psp.sim.delete("/_sim/faults")
    assert cleared.json()["rules"] == [] and cleared.json()["webhooks"]["fail_first"] == 0


async def test_error_500_is_not_processed(psp: Psp) -> None:
    await psp.sim.put("/_sim/faults", json={"rules": [
        {"op": "authorize", "fault": "error_500", "count": 1}]})
    failed = await psp.create(key="op-500")
    assert failed.status_code == 500
    assert failed.json()["error"]["type"] == "api_error"
    assert await psp.search("operation_id", "op-500") == []
    retry = await psp.create(key="op-500")
    assert retry.status_code == 200 and "idempotent-replayed" not in retry.headers
    assert (await psp.sim.get("/_sim/faults")).json()["rules"][0]["remaining"] == 0


async def test_lost_response_in_process_raises_after_committing(psp: Psp) -> None:
    await psp.sim.put("/_sim/faults", json={"rules": [
        {"op": "authorize", "fault": "lost_response", "count": 1}]})
    with pytest.raises(ResponseLost):
        await psp.create(key="op-lost")
    [intent] = await psp.search("operation_id", "op-lost")
    retry = await psp.create(key="op-lost")
    assert retry.headers["idempotent-replayed"] == "true"
    assert retry.json()["id"] == intent["id"]


async def test_a_key_whose_first_request_is_unfinished_answers_409(psp: Psp) -> None:
    body = {"amount": 5000, "currency": "usd", "payment_method": "pm_card_visa",
            "capture_method": "manual", "confirm": True}
    sim = psp.app.state.sim
    store = sim.service.store
    with store.transaction():  # as if a first request had claimed the key and not finished
        store.claim_key(sim.scope, "op-busy",
                        idempotency.fingerprint("POST", "/v1/payment_intents",
                                                parse(encoded(body))),
                        psp.clock.now)
    r = await psp.http.post("/v1/payment_intents", data=dict(form(body)),
                            headers={"Idempotency-Key": "op-busy"})
    assert r.status_code == 409
    assert {k: r.json()["error"][k] for k in ("type", "code")} == {
        "type": "idempotency_error", "code": "idempotency_key_in_use"}
    other = await psp.http.post("/v1/payment_intents", data=dict(form({**body, "amount": 1})),
                                headers={"Idempotency-Key": "op-busy"})
    assert other.status_code == 400
