"""Webhook delivery over real sockets: signatures, retries with backoff after a
non-2xx answer or a refused connection, giving up, and the webhook faults."""

from __future__ import annotations

import functools
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import stripe

from onsale.psp.app import build_psp_app
from onsale.psp.config import PspConfig
from onsale.psp.signature import HEADER, MISMATCH, SignatureError, verify
from onsale.psp.testing import Receiver, ThreadedServer, eventually, reserve_socket, url_of
from tests.psp_support import AUTH, KEY, SECRET, SIM_AUTH, SIM_KEY, card, form


@dataclass
class Setup:
    http: httpx.AsyncClient
    sim: httpx.AsyncClient  # /_sim/*, with the sim key
    receiver: Receiver

    async def authorize(self, method: str = "pm_card_visa") -> dict[str, Any]:
        key = str(uuid.uuid4())
        if method.isdigit():  # a card number, tokenized first as a page does
            made = await self.http.post("/v1/payment_methods", data=dict(form(card(method))))
            assert made.status_code == 200, made.text
            method = made.json()["id"]
        r = await self.http.post("/v1/payment_intents", headers={"Idempotency-Key": key},
                                 data=dict(form({
                                     "amount": 2500, "currency": "usd", "payment_method": method,
                                     "capture_method": "manual", "confirm": True,
                                     "metadata": {"order_id": "o", "operation_id": key}})))
        assert r.status_code in (200, 402), r.text
        data: dict[str, Any] = r.json() if r.status_code == 200 else \
            r.json()["error"]["payment_intent"]
        return data

    async def deliveries(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = (await self.sim.get("/_sim/webhooks")).json()["data"]
        return data

    async def settled(self, count: int) -> list[dict[str, Any]]:
        """Wait until ``count`` events exist and none is pending."""
        async def check() -> list[dict[str, Any]] | None:
            rows = await self.deliveries()
            done = len(rows) == count and all(r["state"] != "pending" for r in rows)
            return rows if done else None
        rows: list[dict[str, Any]] = await eventually(check)
        return rows


def psp_config(tmp_path: Path, webhook_url: str, **overrides: Any) -> PspConfig:
    settings: dict[str, Any] = dict(
        secret_key=KEY, sim_key=SIM_KEY, data_dir=tmp_path / "psp", webhook_url=webhook_url,
        webhook_secret=SECRET, webhook_backoff_base=0.02, webhook_backoff_cap=0.1,
        webhook_timeout=2.0, sweep_interval=0.05)
    settings.update(overrides)
    return PspConfig(**settings)


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, str]]:
    hooks = Receiver()
    sock = reserve_socket()
    with ThreadedServer(hooks.app(), sock) as url:
        yield hooks, f"{url}/hook"


async def started(config: PspConfig, receiver: Receiver) -> AsyncIterator[Setup]:
    sock = reserve_socket()
    app = build_psp_app(config)
    with ThreadedServer(app, sock) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10, headers=AUTH) as http, \
                httpx.AsyncClient(base_url=url, timeout=10, headers=SIM_AUTH) as sim:
            yield Setup(http, sim, receiver)


@pytest.fixture
async def setup(tmp_path: Path, receiver: tuple[Receiver, str]) -> AsyncIterator[Setup]:
    hooks, url = receiver
    async for s in started(psp_config(tmp_path, url), hooks):
        yield s


async def test_events_are_signed_snapshots_with_unique_ids(setup: Setup) -> None:
    intent = await setup.authorize()
    r = await setup.http.post(f"/v1/payment_intents/{intent['id']}/capture",
                              headers={"Idempotency-Key": "cap"})
    assert r.status_code == 200
    await setup.settled(2)
    received = setup.receiver.accepted()
    assert len(received) == 2
    events = [json.loads(d.body) for d in received]
    for delivery in received:
        assert delivery.headers["content-type"] == "application/json"
        verify(SECRET, delivery.body, delivery.headers[HEADER.lower()], now=time.time())
        assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", delivery.headers[HEADER.lower()])
        assert HEADER == "Stripe-Signature"  # and the official SDK accepts it
        event = stripe.Webhook.construct_event(delivery.body,
                                               delivery.headers["stripe-signature"], SECRET)
        assert event.data.object["id"] == intent["id"]
        with pytest.raises(SignatureError) as caught:
            verify(SECRET, delivery.body + b" ", delivery.headers[HEADER.lower()],
                   now=time.time())
        assert caught.value.reason == MISMATCH
    by_type = {e["type"]: e for e in events}
    assert set(by_type) == {"payment_intent.amount_capturable_updated",
                            "payment_intent.succeeded"}
    for event in events:
        assert re.fullmatch(r"evt_[0-9a-f]{24}", event["id"])
        assert event["object"] == "event" and isinstance(event["created"], int)
        assert event["data"]["object"]["id"] == intent["id"]
    assert len({e["id"] for e in events}) == 2
    # each event carries the intent as it was when the event happened
    assert by_type["payment_intent.amount_capturable_updated"]["data"]["object"]["status"] == \
        "requires_capture"
    assert by_type["payment_intent.succeeded"]["data"]["object"]["amount_received"] == 2500


async def test_non_2xx_is_retried_until_2xx(setup: Setup) -> None:
    setup.receiver.fail_next = 3
    intent = await setup.authorize("pm_card_chargeDeclined")
    [row] = await setup.settled(1)
    assert (row["state"], row["attempts"], row["last_status"], row["deliveries"]) == (
        "delivered", 4, 200, 1)
    statuses = [d.status for d in setup.receiver.received]
    assert statuses == [500, 500, 500, 200]
    ids = {json.loads(d.body)["id"] for d in setup.receiver.received}
    assert ids == {row["id"]}
    for delivery in setup.receiver.received:
        verify(SECRET, delivery.body, delivery.headers[HEADER.lower()], now=time.time())
    assert json.loads(setup.receiver.received[0].body)["data"]["object"]["id"] == intent["id"]


async def test_refused_connections_are_retried_until_the_endpoint_is_up(
        tmp_path: Path) -> None:
    hooks = Receiver()
    sock = reserve_socket()  # bound but not listening yet: connections are refused
    async for setup in started(psp_config(tmp_path, f"{url_of(sock)}/hook"), hooks):
        await setup.authorize()
        await eventually(functools.partial(_failed_twice, setup))
        with ThreadedServer(hooks.app(), sock):
            [row] = await setup.settled(1)
        assert (row["state"], row["last_status"]) == ("delivered", 200)
        assert len(hooks.accepted()) == 1


async def _failed_twice(setup: Setup) -> bool:
    rows = await setup.deliveries()
    return bool(rows) and rows[0]["attempts"] >= 2 and rows[0]["last_error"] is not None


async def test_gives_up_after_the_maximum_attempts(
        tmp_path: Path, receiver: tuple[Receiver, str]) -> None:
    hooks, url = receiver
    hooks.fail_next = 1000
    hooks.fail_status = 503
    async for setup in started(psp_config(tmp_path, url, webhook_max_attempts=3), hooks):
        await setup.authorize()
        [row] = await setup.settled(1)
        assert (row["state"], row["attempts"], row["last_status"]) == ("failed", 3, 503)
        assert len(hooks.received) == 3


async def test_fail_first_fault_skips_sending(setup: Setup) -> None:
    r = await setup.sim.put("/_sim/faults", json={"webhooks": {"fail_first": 2}})
    assert r.status_code == 200
    await setup.authorize()
    [row] = await setup.settled(1)
    assert (row["state"], row["attempts"], row["last_status"]) == ("delivered", 3, 200)
    assert len(setup.receiver.received) == 1  # the first two attempts were never sent


async def test_duplicate_fault_delivers_each_event_twice(setup: Setup) -> None:
    await setup.sim.put("/_sim/faults", json={"webhooks": {"duplicate": 1.0}})
    await setup.authorize()
    await setup.authorize("4000000000000002")
    rows = await setup.settled(2)
    assert {row["deliveries"] for row in rows} == {2}
    ids = [json.loads(d.body)["id"] for d in setup.receiver.accepted()]
    assert len(ids) == 4
    assert set(ids) == {row["id"] for row in rows}
    assert all(ids.count(i) == 2 for i in ids)


async def test_paused_then_shuffled_and_delayed(setup: Setup) -> None:
    await setup.sim.put("/_sim/faults", json={"webhooks": {"paused": True}})
    created = [(await setup.authorize())["id"] for _ in range(10)]
    assert setup.receiver.received == []
    rows = await setup.deliveries()
    assert {(row["state"], row["attempts"]) for row in rows} == {("pending", 0)}
    r = await setup.sim.put("/_sim/faults", json={"webhooks": {
        "paused": False, "shuffle": True, "delay_ms": 50}})
    assert r.json()["webhooks"] == {"duplicate": 0.0, "delay_ms": 50, "shuffle": True,
                                    "fail_first": 0, "paused": False}
    await setup.settled(10)
    delivered = [json.loads(d.body)["data"]["object"]["id"] for d in setup.receiver.accepted()]
    assert sorted(delivered) == sorted(created)
