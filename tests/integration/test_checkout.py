"""Checkout against the provider simulator over HTTP: the seed's sequence,
declines, 3-D Secure, idempotency, races, webhooks and the reconciler."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from onsale.core.payments import Payments
from onsale.core.reconciler import reconcile_once
from onsale.embedded import EmbeddedPostgres
from onsale.psp.signature import sign
from tests.conftest import ADMIN_TOKEN, audit_clean
from tests.stack import (
    APPROVE,
    DECLINE,
    INSUFFICIENT,
    THREE_DS,
    WEBHOOK_SECRET,
    Stack,
    connected,
    eventually,
    payments_for,
    started_stack,
)


@pytest.fixture(scope="module")
async def stack(pg: EmbeddedPostgres, template_db: str,
                tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with started_stack(pg, template_db, tmp_path_factory.mktemp("stack")) as s:
        yield s


@pytest.fixture
async def db(stack: Stack) -> AsyncIterator[Any]:
    async with connected(stack) as conn:
        yield conn


@pytest.fixture
async def payments(stack: Stack) -> AsyncIterator[Payments]:
    async with payments_for(stack) as p:
        yield p


@pytest.fixture(autouse=True)
async def _no_faults(stack: Stack) -> AsyncIterator[None]:
    await stack.clear_faults()
    yield
    await stack.clear_faults()


async def new_event(stack: Stack, **body: Any) -> int:
    body.setdefault("name", "Checkout night")
    body.setdefault("seats", 40)
    body.setdefault("queue_policy", "passthrough")  # tests/stack.py admits on first use
    async with stack.client() as c:
        r = await c.post("/api/ops/events", json=body,
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 201, r.text
    return int(r.json()["event_id"])


async def new_account(db: Any) -> uuid.UUID:
    account: uuid.UUID = await db.fetchval(
        "INSERT INTO accounts (email, password_hash) VALUES ($1, 'x') RETURNING account_id",
        f"c{uuid.uuid4().hex[:12]}@example.com")
    return account


async def held(client: httpx.AsyncClient, event_id: int, seats: list[int]) -> str:
    r = await client.post(f"/api/events/{event_id}/holds", json={"seat_ids": seats},
                          headers={"Idempotency-Key": uuid.uuid4().hex})
    assert r.status_code == 201, r.text
    return str(r.json()["hold_id"])


async def checkout(client: httpx.AsyncClient, hold_id: str, card: str,
                   key: str | None = None) -> httpx.Response:
    return await client.post(f"/api/holds/{hold_id}/checkout", json={"payment_method": card},
                             headers={"Idempotency-Key": key or uuid.uuid4().hex})


async def order(client: httpx.AsyncClient, order_id: str) -> dict[str, Any]:
    r = await client.get(f"/api/orders/{order_id}")
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    return data


async def settle(client: httpx.AsyncClient, body: dict[str, Any],
                 want: tuple[str, str]) -> dict[str, Any]:
    """The order once it reaches ``want``. A checkout answers as soon as its own
    steps are done; when the provider's webhook reported the authorization
    first, the capture finishes just after the answer."""
    if (body["order_status"], body["payment_status"]) == want:
        return body

    async def reached() -> Any:
        o = await order(client, body["order_id"])
        return o if (o["order_status"], o["payment_status"]) == want else None
    got: dict[str, Any] = await eventually(reached)
    return got


# The capture reaches the provider after the authorization lapsed (a stack started with
# auth_window_seconds=1): the capture definitively fails and the sale is compensated.
LAPSED_CAPTURE = [{"op": "capture", "fault": "latency", "ms": 1500}]


async def checkout_until_cancelled(c: httpx.AsyncClient, hold_id: str) -> dict[str, Any]:
    """Pay with an approved card and follow the order until it is CANCELLED: the
    capture runs in the request, or after it when the webhook reported the
    authorization first, so the order is polled either way."""
    first = (await checkout(c, hold_id, APPROVE)).json()

    async def cancelled() -> Any:
        o = await order(c, first["order_id"])
        return o if o["order_status"] == "CANCELLED" else None
    body: dict[str, Any] = await eventually(cancelled)
    return body


async def seat_statuses(db: Any, event_id: int, seats: list[int]) -> list[str]:
    rows = await db.fetch("SELECT status FROM seat_inventory WHERE event_id = $1 "
                          "AND seat_id = ANY($2) ORDER BY seat_id", event_id, seats)
    return [r["status"] for r in rows]


async def intents_for(stack: Stack, order_id: str) -> list[dict[str, Any]]:
    async with stack.psp_client() as c:
        r = await c.get("/_sim/intents", params={"metadata_key": "order_id",
                                                 "metadata_value": order_id})
    assert r.status_code == 200, r.text
    data = r.json()
    return list(data["data"] if isinstance(data, dict) else data)


async def test_approved_card_confirms_sells_and_captures(stack: Stack, db: Any) -> None:
    event_id = await new_event(stack)
    me = await new_account(db)
    async with stack.client(me) as c:
        hold_id = await held(c, event_id, [1, 2])
        r = await checkout(c, hold_id, APPROVE)
        assert r.status_code == 201, r.text
        body = await settle(c, r.json(), ("CONFIRMED", "CAPTURED"))
        assert r.headers["location"] == f"/api/orders/{body['order_id']}"
        assert body["amount_minor"] == sum(s["price_minor"] for s in body["seats"])
        assert [s["seat_id"] for s in body["seats"]] == [1, 2]
        again = await order(c, body["order_id"])
        assert {k: again[k] for k in ("order_status", "payment_status", "seats", "amount_minor")} \
            == {k: body[k] for k in ("order_status", "payment_status", "seats", "amount_minor")}
    assert await seat_statuses(db, event_id, [1, 2]) == ["SOLD", "SOLD"]
    intents = await intents_for(stack, body["order_id"])
    assert [(i["status"], i["amount_received"]) for i in intents] == \
        [("succeeded", body["amount_minor"])]
    async with stack.client(await new_account(db)) as stranger:
        r = await stranger.get(f"/api/orders/{body['order_id']}")
        assert r.status_code == 404 and r.json()["code"] == "order_not_found"
    await audit_clean(db)


async def test_a_declined_card_returns_the_hold_for_another_try(stack: Stack, db: Any) -> None:
    event_id = await new_event(stack)
    me = await new_account(db)
    async with stack.client(me) as c:
        hold_id = await held(c, event_id, [3])
        first = await checkout(c, hold_id, DECLINE)
        assert first.status_code == 201, first.text
        assert (first.json()["order_status"], first.json()["payment_status"]) == \
            ("PENDING", "DECLINED")
        assert (await c.get(f"/api/holds/{hold_id}")).json()["status"] == "HELD"
        assert await seat_statuses(db, event_id, [3]) == ["HELD"]
        second = await checkout(c, hold_id, INSUFFICIENT)
        assert second.json()["payment_status"] == "DECLINED"
        third = await checkout(c, hold_id, APPROVE)
        assert third.json()["order_id"] == first.json()["order_id"]  # one order per hold
        await settle(c, third.json(), ("CONFIRMED", "CAPTURED"))
    codes = await db.fetch("SELECT status, failure_code FROM payment_operations "
                           "WHERE kind = 'AUTHORIZE' AND order_id = $1 ORDER BY created_at",
                           uuid.UUID(first.json()["order_id"]))
    assert [(r["status"], r["failure_code"]) for r in codes] == [
        ("FAILED", "generic_decline"), ("FAILED", "insufficient_funds"), ("SUCCEEDED", None)]
    await audit_clean(db)


async def test_replay_and_conflict_of_one_checkout_key(stack: Stack, db: Any) -> None:
    event_id = await new_event(stack)
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [4])
        first = await checkout(c, hold_id, APPROVE, key="pay-1")
        again = await checkout(c, hold_id, APPROVE, key="pay-1")
        assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
        assert again.json()["order_id"] == first.json()["order_id"]
        other = await checkout(c, hold_id, DECLINE, key="pay-1")
        assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
        later = await checkout(c, hold_id, APPROVE)
        assert later.status_code == 409 and later.json()["code"] == "hold_checked_out"
    assert len(await intents_for(stack, first.json()["order_id"])) == 1
    await audit_clean(db)


async def test_two_checkouts_racing_on_one_hold_make_one_order(stack: Stack, db: Any) -> None:
    event_id = await new_event(stack)
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [5, 6])
        answers = await asyncio.gather(*(checkout(c, hold_id, APPROVE) for _ in range(8)))
    created = [a for a in answers if a.status_code == 201]
    assert len(created) == 1, [a.text for a in answers]
    assert {a.json()["code"] for a in answers if a.status_code != 201} <= {
        "checkout_in_progress", "hold_checked_out"}
    assert await db.fetchval("SELECT count(*) FROM orders o JOIN holds h USING (hold_id) "
                             "WHERE h.hold_id = $1", uuid.UUID(hold_id)) == 1
    assert len(await intents_for(stack, created[0].json()["order_id"])) == 1
    await audit_clean(db)


async def test_bad_requests_get_clear_errors(stack: Stack, db: Any) -> None:
    event_id = await new_event(stack)
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [7])
        r = await c.post(f"/api/holds/{hold_id}/checkout", json={"payment_method": APPROVE})
        assert r.json()["code"] == "idempotency_key_required"
        for bad in ({}, {"payment_method": ""}, {"payment_method": 4242},
                    {"payment_method": APPROVE, "amount_minor": 1}):
            r = await c.post(f"/api/holds/{hold_id}/checkout", json=bad,
                             headers={"Idempotency-Key": uuid.uuid4().hex})
            assert r.status_code == 400, r.text
            assert r.headers["content-type"].startswith("application/problem+json")
        r = await checkout(c, str(uuid.uuid4()), APPROVE)
        assert (r.status_code, r.json()["code"]) == (404, "hold_not_found")
        r = await c.get("/api/orders/not-a-uuid")
        assert (r.status_code, r.json()["code"]) == (404, "order_not_found")
    async with stack.client(await new_account(db)) as stranger:
        r = await checkout(stranger, hold_id, APPROVE)
        assert (r.status_code, r.json()["code"]) == (404, "hold_not_found")
    async with stack.client() as anonymous:
        r = await checkout(anonymous, hold_id, APPROVE)
        assert r.status_code == 401
    await audit_clean(db)


async def test_three_d_secure_completes_through_the_webhook(stack: Stack, db: Any) -> None:
    event_id = await new_event(stack)
    async with stack.client(await new_account(db)) as c:
        ok_hold = await held(c, event_id, [8])
        r = await checkout(c, ok_hold, THREE_DS)
        body = r.json()
        assert (body["order_status"], body["payment_status"]) == ("PENDING", "REQUIRES_ACTION")
        url = body["next_action"]["redirect_to_url"]["url"]
        assert await seat_statuses(db, event_id, [8]) == ["PAYMENT_PENDING"]
        async with httpx.AsyncClient(timeout=30) as browser:
            done = await browser.post(url, data={"result": "succeed"})
            assert done.status_code in (200, 303), done.text

        async def captured() -> bool:
            o = await order(c, body["order_id"])
            return (o["order_status"], o["payment_status"]) == ("CONFIRMED", "CAPTURED")
        await eventually(captured)

        failed_hold = await held(c, event_id, [9])
        body = (await checkout(c, failed_hold, THREE_DS)).json()
        async with httpx.AsyncClient(timeout=30) as browser:
            url = body["next_action"]["redirect_to_url"]["url"]
            await browser.post(url, data={"result": "fail"})

        async def declined() -> bool:
            o = await order(c, body["order_id"])
            return o["payment_status"] == "DECLINED"
        await eventually(declined)
        assert (await c.get(f"/api/holds/{failed_hold}")).json()["status"] == "HELD"
    await audit_clean(db)


def signed(event: dict[str, Any], secret: str = WEBHOOK_SECRET,
           at: float | None = None) -> tuple[bytes, dict[str, str]]:
    raw = json.dumps(event).encode()
    return raw, {"Stripe-Signature": sign(secret, raw, at or time.time()),
                 "Content-Type": "application/json"}


async def test_webhooks_are_verified_deduplicated_and_never_move_state_back(
        stack: Stack, db: Any) -> None:
    event_id = await new_event(stack)
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [10])
        body = (await checkout(c, hold_id, APPROVE)).json()
    intent = (await intents_for(stack, body["order_id"]))[0]
    stale_intent = intent | {"status": "requires_payment_method"}
    event = {"id": f"evt_{uuid.uuid4().hex}", "object": "event",
             "type": "payment_intent.payment_failed", "created": int(time.time()),
             "data": {"object": stale_intent}}
    async with stack.client() as provider:
        for raw, headers in (signed(event, secret="whsec_forged_0123456789"),
                             signed(event, at=time.time() - 3600)):
            r = await provider.post("/api/webhooks/payments", content=raw, headers=headers)
            assert (r.status_code, r.json()["code"]) == (400, "invalid_signature")
        r = await provider.post("/api/webhooks/payments", content=b"{}",
                                headers={"Content-Type": "application/json"})
        assert r.status_code == 400
        # A late "failed" event for a confirmed payment: recorded, ignored.
        raw, headers = signed(event)
        r = await provider.post("/api/webhooks/payments", content=raw, headers=headers)
        assert r.status_code == 200 and r.json()["applied"] is False
        r = await provider.post("/api/webhooks/payments", content=raw, headers=headers)
        assert r.json()["duplicate"] is True
    async with stack.client(await db.fetchval("SELECT account_id FROM orders WHERE order_id=$1",
                                              uuid.UUID(body["order_id"]))) as c:
        o = await order(c, body["order_id"])
    assert (o["order_status"], o["payment_status"]) == ("CONFIRMED", "CAPTURED")
    await audit_clean(db)


async def test_provider_timeout_is_unknown_then_reconciled(
        stack: Stack, db: Any, payments: Payments) -> None:
    event_id = await new_event(stack)
    await stack.set_faults(rules=[{"op": "authorize", "fault": "timeout", "ms": 4000,
                                   "count": 1}], webhooks={"paused": True})
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [11, 12])
        body = (await checkout(c, hold_id, APPROVE)).json()
        assert (body["order_status"], body["payment_status"]) == ("PENDING", "UNKNOWN")
        assert await seat_statuses(db, event_id, [11, 12]) == ["PAYMENT_PENDING"] * 2
        # Never claimable while the outcome is unknown.
        async with stack.client(await new_account(db)) as other:
            r = await other.post(f"/api/events/{event_id}/holds", json={"seat_ids": [11]},
                                 headers={"Idempotency-Key": uuid.uuid4().hex})
            assert r.status_code == 409

        async def converged() -> bool:
            await reconcile_once(payments)
            o = await order(c, body["order_id"])
            return (o["order_status"], o["payment_status"]) == ("CONFIRMED", "CAPTURED")
        await eventually(converged)
    assert len(await intents_for(stack, body["order_id"])) == 1
    await audit_clean(db)


async def test_a_lost_response_converges_through_the_webhook(stack: Stack, db: Any) -> None:
    event_id = await new_event(stack)
    await stack.set_faults(rules=[{"op": "authorize", "fault": "lost_response", "count": 1}])
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [13])
        body = (await checkout(c, hold_id, APPROVE)).json()
        assert body["payment_status"] in ("UNKNOWN", "AUTHORIZED", "CAPTURED")

        async def converged() -> bool:
            o = await order(c, body["order_id"])
            return (o["order_status"], o["payment_status"]) == ("CONFIRMED", "CAPTURED")
        await eventually(converged)
    assert len(await intents_for(stack, body["order_id"])) == 1
    await audit_clean(db)


async def test_provider_5xx_then_the_shoppers_retry_resumes_the_same_operation(
        stack: Stack, db: Any, payments: Payments) -> None:
    event_id = await new_event(stack)
    await stack.set_faults(rules=[{"op": "authorize", "fault": "error_500", "count": 1}])
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [14])
        first = (await checkout(c, hold_id, APPROVE, key="k-5xx")).json()
        assert first["payment_status"] == "UNKNOWN"
        # Nothing at the provider and the grace still running: the reconciler waits.
        async def waited() -> bool:
            return (await reconcile_once(payments)).get("wait", 0) >= 1
        await eventually(waited)
        assert await seat_statuses(db, event_id, [14]) == ["PAYMENT_PENDING"]
        again = await checkout(c, hold_id, APPROVE, key="k-5xx")
        assert again.json()["order_id"] == first["order_id"]
        await settle(c, again.json(), ("CONFIRMED", "CAPTURED"))
    ops = await db.fetchval("SELECT count(*) FROM payment_operations WHERE order_id = $1 "
                            "AND kind = 'AUTHORIZE'", uuid.UUID(first["order_id"]))
    assert ops == 1
    await audit_clean(db)


async def test_capture_unknown_keeps_the_sale_and_converges(
        stack: Stack, db: Any, payments: Payments) -> None:
    event_id = await new_event(stack)
    await stack.set_faults(rules=[{"op": "capture", "fault": "error_500", "count": 1}])
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [15])
        body = (await checkout(c, hold_id, APPROVE)).json()
        body = await settle(c, body, ("CONFIRMED", "UNKNOWN"))
        assert await seat_statuses(db, event_id, [15]) == ["SOLD"]

        async def converged() -> bool:
            await reconcile_once(payments)
            return (await order(c, body["order_id"]))["payment_status"] == "CAPTURED"
        await eventually(converged)
    await audit_clean(db)


async def test_hold_expiring_while_the_authorization_is_in_flight_uses_the_grace(
        stack: Stack, db: Any) -> None:
    event_id = await new_event(stack, hold_ttl_seconds=1)
    await stack.set_faults(rules=[{"op": "authorize", "fault": "latency", "ms": 1600,
                                   "count": 1}])
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [16])
        paying = asyncio.create_task(checkout(c, hold_id, APPROVE))
        await asyncio.sleep(1.2)  # past the hold's own deadline, payment still in flight
        assert not paying.done()
        assert await seat_statuses(db, event_id, [16]) == ["PAYMENT_PENDING"]
        swept = await db.fetchrow("SELECT * FROM onsale_sweep(100)")
        assert swept["seats_released"] == 0
        async with stack.client(await new_account(db)) as other:
            r = await other.post(f"/api/events/{event_id}/holds", json={"seat_ids": [16]},
                                 headers={"Idempotency-Key": uuid.uuid4().hex})
            assert (r.status_code, r.json()["code"]) == (409, "seats_unavailable")
        await settle(c, (await paying).json(), ("CONFIRMED", "CAPTURED"))
    await audit_clean(db)


async def test_duplicate_delayed_and_reordered_webhooks_converge_once(
        stack: Stack, db: Any) -> None:
    event_id = await new_event(stack)
    await stack.set_faults(webhooks={"duplicate": 1.0, "shuffle": True, "delay_ms": 300})
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [17, 18])
        body = (await checkout(c, hold_id, THREE_DS)).json()
        async with httpx.AsyncClient(timeout=30) as browser:
            await browser.post(body["next_action"]["redirect_to_url"]["url"],
                               data={"result": "succeed"})

        async def settled() -> bool:
            o = await order(c, body["order_id"])
            received = await db.fetch(
                "SELECT w.event_type, w.outcome FROM webhook_events w "
                "WHERE w.payload -> 'data' -> 'object' -> 'metadata' ->> 'order_id' = $1",
                body["order_id"])
            types = {r["event_type"] for r in received}
            return (o["order_status"], o["payment_status"]) == ("CONFIRMED", "CAPTURED") and \
                {"payment_intent.requires_action", "payment_intent.amount_capturable_updated",
                 "payment_intent.succeeded"} <= types
        await eventually(settled)
    async with stack.psp_client() as p:
        deliveries = (await p.get("/_sim/webhooks")).json()
    deliveries = deliveries["data"] if isinstance(deliveries, dict) else deliveries
    assert deliveries, "the simulator reports its deliveries"
    ops = await db.fetch("SELECT kind, status FROM payment_operations WHERE order_id = $1 "
                         "ORDER BY created_at", uuid.UUID(body["order_id"]))
    assert [(r["kind"], r["status"]) for r in ops] == [("AUTHORIZE", "SUCCEEDED"),
                                                       ("CAPTURE", "SUCCEEDED")]
    assert len(await intents_for(stack, body["order_id"])) == 1
    await audit_clean(db)


async def test_a_webhook_that_overtakes_the_response_waits_and_is_only_recorded(
        stack: Stack, db: Any) -> None:
    """The provider sends the authorization's event before its answer (the answer held
    800 ms after the intent was decided): the delivery waits for the checkout's own
    apply (core/in_flight.py) and then only records the event. One apply sells."""
    event_id = await new_event(stack)
    await stack.set_faults(rules=[{"op": "authorize", "fault": "timeout", "ms": 800,
                                   "count": 1}])
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [21])
        r = await checkout(c, hold_id, APPROVE)
        assert r.status_code == 201, r.text
        body = await settle(c, r.json(), ("CONFIRMED", "CAPTURED"))

        async def recorded() -> Any:
            rows = await db.fetch(
                "SELECT w.event_type, w.outcome FROM webhook_events w "
                "WHERE w.payload -> 'data' -> 'object' -> 'metadata' ->> 'order_id' = $1",
                body["order_id"])
            kinds = {row["event_type"]: row["outcome"] for row in rows}
            return kinds if "payment_intent.amount_capturable_updated" in kinds else None
        kinds = await eventually(recorded)
    assert kinds["payment_intent.amount_capturable_updated"] == "ignored"
    sold = await db.fetch("SELECT detail ->> 'source' AS source FROM payment_events "
                          "WHERE order_id = $1 AND action = 'authorize:authorized'",
                          uuid.UUID(body["order_id"]))
    assert [row["source"] for row in sold] == ["response"]
    await audit_clean(db)


async def test_reconciler_metrics_report_the_open_operations(
        stack: Stack, db: Any, payments: Payments) -> None:
    from onsale.core.reconciler import update_backlog

    event_id = await new_event(stack)
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [19])
        body = (await checkout(c, hold_id, THREE_DS)).json()
    await update_backlog(payments, payments.metrics)
    backlog = payments.metrics.registry.get_sample_value("onsale_payment_open_operations",
                                                         {"shard": "1"})
    assert backlog is not None and backlog >= 1
    async with stack.client(await db.fetchval("SELECT account_id FROM orders WHERE order_id=$1",
                                              uuid.UUID(body["order_id"]))) as c:
        async with httpx.AsyncClient(timeout=30) as browser:
            await browser.post(body["next_action"]["redirect_to_url"]["url"],
                               data={"result": "succeed"})

        async def done() -> bool:
            return (await order(c, body["order_id"]))["payment_status"] == "CAPTURED"
        await eventually(done)
    await audit_clean(db)


async def test_a_declined_order_nobody_pays_ends_with_its_hold(stack: Stack, db: Any) -> None:
    from onsale.core.sweeper import sweep_once

    event_id = await new_event(stack, hold_ttl_seconds=1)
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [20])
        body = (await checkout(c, hold_id, DECLINE)).json()
        assert (body["order_status"], body["payment_status"]) == ("PENDING", "DECLINED")

        async def ended() -> Any:
            await sweep_once(db, 100)
            o = await order(c, body["order_id"])
            return o if o["order_status"] == "FAILED" else None
        closed = await eventually(ended)
    assert (closed["payment_status"], closed["cancel_reason"]) == ("DECLINED", "hold_ended")
    assert await seat_statuses(db, event_id, [20]) == ["AVAILABLE"]
    await audit_clean(db)


async def test_a_card_number_never_reaches_core(stack: Stack, db: Any) -> None:
    """Checkout takes only a PaymentMethod id: a card number is refused before anything
    is written, and no table holds it; the same hold then pays with a pm_ id."""
    event_id = await new_event(stack)
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [21])
        for card in ("4242 4242 4242 4242", "4242-4242-4242-4242", "4242424242424242"):
            refused = await checkout(c, hold_id, card)
            assert (refused.status_code, refused.json()["code"]) == (400, "invalid_payment_method")
            assert "4242" not in refused.text
        assert await db.fetchval("SELECT count(*) FROM orders WHERE hold_id = $1",
                                 uuid.UUID(hold_id)) == 0
        paid = await checkout(c, hold_id, APPROVE)
        assert paid.status_code == 201, paid.text
    stored = await db.fetchval(
        "SELECT count(*) FROM payment_operations WHERE payment_method ~ '[0-9]{12}'")
    assert stored == 0
    await audit_clean(db)
