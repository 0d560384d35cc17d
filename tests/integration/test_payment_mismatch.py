"""Provider answers whose PaymentIntent contradicts the payment operation (another
amount, currency or intent id) never confirm a sale, capture, void or release
anything: the operation stays UNKNOWN (or where it was), the answer is logged and
counted, and only an answer that agrees settles it (docs/payments.md#answers-that-do-
not-match-their-operation). Against the real simulator: its ``wrong_*`` faults alter
an answer after doing the real work, and signed webhooks are forged with the
endpoint's secret, as a compromised or buggy sender would."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from onsale.core.payment_rules import MISMATCH_RECHECK_SECONDS
from onsale.core.payments import MISMATCH_LOG, Payments
from onsale.core.reconciler import reconcile_once
from onsale.embedded import EmbeddedPostgres
from tests.conftest import audit_clean
from tests.integration.test_checkout import (
    checkout,
    held,
    intents_for,
    new_account,
    new_event,
    order,
    seat_statuses,
    signed,
)
from tests.stack import (
    APPROVE,
    THREE_DS,
    Stack,
    connected,
    eventually,
    payments_for,
    started_stack,
)


@pytest.fixture(scope="module")
async def stack(pg: EmbeddedPostgres, template_db: str,
                tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with started_stack(pg, template_db, tmp_path_factory.mktemp("mismatch")) as s:
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


async def authorization(db: Any, order_id: str, kind: str = "AUTHORIZE") -> Any:
    return await db.fetchrow(
        "SELECT operation_id, status, provider_ref, next_check_at - now() AS due_in "
        "FROM payment_operations WHERE order_id = $1 AND kind = $2",
        uuid.UUID(order_id), kind)


async def actions(db: Any, order_id: str) -> list[str]:
    rows = await db.fetch("SELECT action FROM payment_events WHERE order_id = $1 "
                          "ORDER BY payment_event_id", uuid.UUID(order_id))
    return [r["action"] for r in rows]


async def core_metric(stack: Stack, source: str, field: str) -> float:
    """onsale_payment_mismatch_total{source, field} on the core process's /metrics (its
    ops listener)."""
    async with httpx.AsyncClient(base_url=stack.core_ops_url, timeout=10) as c:
        text = (await c.get("/metrics")).text
    for line in text.splitlines():
        if line.startswith("onsale_payment_mismatch_total{") and \
                f'source="{source}"' in line and f'field="{field}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def reconcile_now(payments: Payments, db: Any, operation_id: uuid.UUID) -> dict[str, int]:
    await db.execute("UPDATE payment_operations SET next_check_at = now() "
                     "WHERE operation_id = $1", operation_id)
    return await reconcile_once(payments)


@pytest.mark.parametrize(("fault", "field"), [("wrong_amount", "amount"),
                                              ("wrong_currency", "currency")])
async def test_an_authorization_for_another_amount_or_currency_never_sells(
        stack: Stack, db: Any, payments: Payments, fault: str, field: str) -> None:
    event_id = await new_event(stack)
    before = await core_metric(stack, "response", field)
    # The provider authorizes the right amount; its answers (the checkout's and the
    # reconciler's searches) say otherwise. Webhooks wait.
    await stack.set_faults(rules=[{"op": "authorize", "fault": fault, "count": 1},
                                  {"op": "search", "fault": fault}],
                           webhooks={"paused": True})
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [1, 2])
        r = await checkout(c, hold_id, APPROVE)
        assert r.status_code == 201, r.text
        body = r.json()
        assert (body["order_status"], body["payment_status"]) == ("PENDING", "UNKNOWN")
        assert await seat_statuses(db, event_id, [1, 2]) == ["PAYMENT_PENDING"] * 2
        [intent] = await intents_for(stack, body["order_id"])
        assert intent["status"] == "requires_capture"  # authorized at the provider
        op = await authorization(db, body["order_id"])
        assert (op["status"], op["provider_ref"]) == ("UNKNOWN", None)
        assert await core_metric(stack, "response", field) == before + 1
        assert stack.core is not None
        assert any(MISMATCH_LOG in line and f"PaymentIntent's {field} differs" in line
                   for line in stack.core.output)

        # The reconciler asks again and again: the same contradicting intent is never
        # applied, and the operation is looked at again only much later.
        for _ in range(2):
            counts = await reconcile_now(payments, db, op["operation_id"])
            assert counts.get("mismatch", 0) >= 1, counts
            row = await authorization(db, body["order_id"])
            assert row["status"] == "UNKNOWN"
            assert row["due_in"].total_seconds() > MISMATCH_RECHECK_SECONDS - 60
            assert await seat_statuses(db, event_id, [1, 2]) == ["PAYMENT_PENDING"] * 2
            o = await order(c, body["order_id"])
            assert (o["order_status"], o["payment_status"]) == ("PENDING", "UNKNOWN")
        assert payments.metrics.registry.get_sample_value(
            "onsale_payment_mismatch_total", {"source": "reconciler", "field": field}) == 2
        assert await actions(db, body["order_id"]) == \
            ["checkout_started"] + ["authorize:mismatch"] * 3
        await audit_clean(db)

        # Settled by an answer that agrees: the provider's own webhook, once delivered.
        await stack.clear_faults()

        async def sold() -> bool:
            o = await order(c, body["order_id"])
            return (o["order_status"], o["payment_status"]) == ("CONFIRMED", "CAPTURED")
        await eventually(sold)
    assert await seat_statuses(db, event_id, [1, 2]) == ["SOLD"] * 2
    await audit_clean(db)


def authorized_event(intent: dict[str, Any], event_type: str, **changes: Any
                     ) -> dict[str, Any]:
    """A webhook event for ``intent`` (as the simulator holds it), with ``changes``."""
    obj = {**intent, "status": "requires_capture", "next_action": None,
           "amount_capturable": intent["amount"], **changes}
    if event_type == "payment_intent.canceled":
        obj["status"] = "canceled"
    return {"id": f"evt_{uuid.uuid4().hex}", "object": "event", "type": event_type,
            "created": int(time.time()), "data": {"object": obj}}


async def test_a_signed_webhook_for_another_amount_currency_or_intent_moves_nothing(
        stack: Stack, db: Any, payments: Payments) -> None:
    event_id = await new_event(stack)
    await stack.set_faults(webhooks={"paused": True})  # only the forged events arrive
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [3, 4])
        body = (await checkout(c, hold_id, THREE_DS)).json()
        assert (body["order_status"], body["payment_status"]) == ("PENDING", "REQUIRES_ACTION")
        [intent] = await intents_for(stack, body["order_id"])
        op = await authorization(db, body["order_id"])
        assert op["provider_ref"] == intent["id"]
        before = await core_metric(stack, "webhook", "amount")

        forged = [
            authorized_event(intent, "payment_intent.amount_capturable_updated",
                             amount=intent["amount"] + 1, amount_capturable=1),
            authorized_event(intent, "payment_intent.amount_capturable_updated",
                             currency="xts"),
            # Another intent naming this operation in its metadata.
            authorized_event(intent, "payment_intent.amount_capturable_updated",
                             id="pi_someone_else"),
            authorized_event(intent, "payment_intent.succeeded", status="succeeded",
                             amount=intent["amount"] * 2),
            # A cancel of another amount would otherwise fail the order and free the seats.
            authorized_event(intent, "payment_intent.canceled", amount=1),
        ]
        async with stack.client() as provider:
            for event in forged:
                raw, headers = signed(event)
                r = await provider.post("/api/webhooks/payments", content=raw, headers=headers)
                assert (r.status_code, r.json()) == (200, {"received": True, "applied": False})
                again = await provider.post("/api/webhooks/payments", content=raw,
                                            headers=headers)
                assert again.json()["duplicate"] is True
        outcomes = await db.fetch(
            "SELECT outcome FROM webhook_events WHERE provider_event_id = ANY($1)",
            [e["id"] for e in forged])
        # payment_intent.succeeded names the capture, which does not exist yet: ignored.
        assert sorted(r["outcome"] for r in outcomes) == ["ignored"] + ["mismatch"] * 4
        assert await core_metric(stack, "webhook", "amount") == before + 2  # and the cancel
        assert await seat_statuses(db, event_id, [3, 4]) == ["PAYMENT_PENDING"] * 2
        o = await order(c, body["order_id"])
        assert (o["order_status"], o["payment_status"]) == ("PENDING", "REQUIRES_ACTION")
        assert (await authorization(db, body["order_id"]))["status"] == "REQUIRES_ACTION"
        await audit_clean(db)

        # The reconciler's search answering about another intent is no answer either.
        await stack.set_faults(rules=[{"op": "search", "fault": "wrong_id"}],
                               webhooks={"paused": True})
        counts = await reconcile_now(payments, db, op["operation_id"])
        assert counts.get("mismatch", 0) >= 1, counts
        row = await authorization(db, body["order_id"])
        assert row["status"] == "REQUIRES_ACTION"
        assert row["due_in"].total_seconds() > MISMATCH_RECHECK_SECONDS - 60
        assert payments.metrics.registry.get_sample_value(
            "onsale_payment_mismatch_total", {"source": "reconciler", "field": "id"}) == 1
        await audit_clean(db)

        # The shopper completes 3-D Secure; the provider's true events sell the seats.
        await stack.clear_faults()
        async with httpx.AsyncClient(timeout=30) as browser:
            done = await browser.post(body["next_action"]["redirect_to_url"]["url"],
                                      data={"result": "succeed"})
            assert done.status_code in (200, 303), done.text

        async def sold() -> bool:
            o = await order(c, body["order_id"])
            return (o["order_status"], o["payment_status"]) == ("CONFIRMED", "CAPTURED")
        await eventually(sold)
    assert await seat_statuses(db, event_id, [3, 4]) == ["SOLD"] * 2
    await audit_clean(db)


async def test_a_capture_answer_about_another_intent_is_not_a_capture(
        stack: Stack, db: Any, payments: Payments) -> None:
    """The sale stands (its authorization agreed); the capture stays UNKNOWN until an
    answer about the captured intent arrives."""
    event_id = await new_event(stack)
    await stack.set_faults(rules=[{"op": "capture", "fault": "wrong_id"}],
                           webhooks={"paused": True})
    async with stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [5])
        body = (await checkout(c, hold_id, APPROVE)).json()

        async def capture_held() -> Any:
            row = await authorization(db, body["order_id"], "CAPTURE")
            return row if row is not None and row["status"] == "UNKNOWN" else None
        capture = await eventually(capture_held)
        o = await order(c, body["order_id"])
        assert (o["order_status"], o["payment_status"]) == ("CONFIRMED", "UNKNOWN")
        assert await seat_statuses(db, event_id, [5]) == ["SOLD"]
        counts = await reconcile_now(payments, db, capture["operation_id"])
        assert counts.get("mismatch", 0) >= 1, counts
        row = await authorization(db, body["order_id"], "CAPTURE")
        assert row["status"] == "UNKNOWN"
        assert row["due_in"].total_seconds() > MISMATCH_RECHECK_SECONDS - 60
        assert (await actions(db, body["order_id"]))[-2:] == ["capture:mismatch"] * 2
        await audit_clean(db)

        await stack.clear_faults()  # the provider's payment_intent.succeeded settles it

        async def captured() -> bool:
            return (await order(c, body["order_id"]))["payment_status"] == "CAPTURED"
        await eventually(captured)
    await audit_clean(db)
