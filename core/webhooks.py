"""POST /api/webhooks/payments: verified provider events move payment state.

A bad or stale ``Stripe-Signature`` is refused (400) before anything is read; it is
checked with the stripe SDK's verifier. Each
event is recorded by its provider id in the same transaction that applies
it, so a duplicate delivery changes nothing; the apply function accepts only
forward transitions, so a late or reordered event cannot move state back.
An event whose PaymentIntent contradicts the operation it names (another id,
amount or currency) is recorded as ``mismatch`` and applies nothing.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import stripe
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.core.payment_rules import (
    Outcome,
    Recorded,
    can_change,
    mismatch,
    webhook_outcomes,
)
from onsale.core.payments import Payments
from onsale.core.psp_client import SIMULATOR_HEADER
from onsale.core.queries import queries
from onsale.core.state import core_state
from onsale.core.webhook_batch import Delivery, WebhookRecords
from onsale.kernel.db import Database
from onsale.kernel.logs import bind, plausible_id
from onsale.kernel.problems import Problem

SIGNATURE_TOLERANCE_SECONDS = 300  # Stripe's default
SIGNATURE_HEADER = "Stripe-Signature"


def parse_event(raw: bytes) -> tuple[str, str, dict[str, Any], uuid.UUID | None]:
    """(event id, type, the event's object, the authorization's operation id). The id
    is None for an event that is not about one of our payments: another type, or a
    PaymentIntent that onsale did not create (same Stripe account, another app). Those
    are acknowledged and ignored, so Stripe does not retry them."""
    try:
        event = json.loads(raw)
        event_id, event_type = event["id"], event["type"]
        obj = event["data"]["object"]
    except (ValueError, KeyError, TypeError):
        raise Problem(400, "invalid_webhook",
                      detail="Expected an event with id, type and data.object.") from None
    if not (isinstance(event_id, str) and isinstance(event_type, str)
            and isinstance(obj, dict)):
        raise Problem(400, "invalid_webhook", detail="id and type must be strings.")
    metadata = obj.get("metadata")
    raw_id = metadata.get("operation_id") if isinstance(metadata, dict) else None
    try:
        operation_id = uuid.UUID(raw_id) if isinstance(raw_id, str) else None
    except ValueError:
        operation_id = None
    if obj.get("object") not in (None, "payment_intent"):
        operation_id = None
    return event_id, event_type, obj, operation_id


def purchase_ids(intent: dict[str, Any]) -> dict[str, str]:
    """The ids of the purchase an intent's metadata names (the checkout's request id,
    the admission's, the order), for this delivery's log lines."""
    metadata = intent.get("metadata")
    if not isinstance(metadata, dict):
        return {}
    ids = {name: plausible_id(metadata.get(name)) for name in ("request_id", "admission",
                                                              "order_id")}
    return {name: value for name, value in ids.items() if value is not None}


def webhook_shard(request: Request, authorize_id: uuid.UUID | None) -> Database:
    """Where a delivery is recorded and applied: the shard that made the operation its
    PaymentIntent's metadata names (the id carries its shard); the directory's (shard
    1) for an event about no payment of ours, which is only recorded there."""
    shards = core_state(request).shards
    shard_id = None if authorize_id is None else shards.placement.shard_of_id(authorize_id)
    return shards.database(shard_id if shard_id is not None else 1)


async def receive_payment_webhook(request: Request) -> Response:
    payments = core_state(request).payments
    if payments is None:
        raise Problem(503, "payments_unavailable")
    metrics = core_state(request).metrics
    if SIMULATOR_HEADER in request.headers and not payments.settings.allow_simulator:
        metrics.webhooks.labels(result="simulator_refused").inc()
        raise Problem(503, "payments_unavailable",
                      detail="Webhooks from the payment simulator are refused here "
                             "(ONSALE_ALLOW_SIMULATOR is not set).")
    raw = await request.body()
    try:
        stripe.WebhookSignature.verify_header(
            raw, request.headers.get(SIGNATURE_HEADER, ""),
            payments.settings.stripe_webhook_secret, tolerance=SIGNATURE_TOLERANCE_SECONDS)
    except (stripe.SignatureVerificationError, UnicodeDecodeError):
        metrics.webhooks.labels(result="bad_signature").inc()
        raise Problem(400, "invalid_signature",
                      detail="The Stripe-Signature header does not prove that the provider "
                             "sent this payload (or it is older than 300 s).") from None
    event_id, event_type, intent, authorize_id = parse_event(raw)
    bind(**purchase_ids(intent))  # the purchase's own ids, not this delivery's
    q = queries("payments")
    db = webhook_shard(request, authorize_id)
    payments = payments.on(db)
    payload = json.loads(raw)
    outcomes = webhook_outcomes(event_type, intent) if authorize_id is not None else []
    if outcomes:
        # An answer this process is applying right now (the event overtook the API's
        # response, core/in_flight.py): wait for it, then this delivery is only recorded.
        await payments.in_flight.settled(str(authorize_id))
    async with db.connection() as conn:
        # Most events confirm what a response already applied: find out first,
        # without locks, and only record those (with others: core/webhook_batch.py).
        todo: list[tuple[uuid.UUID, Outcome, Recorded]] = []
        contradicted: list[tuple[uuid.UUID, str, str]] = []
        for kind, outcome in outcomes:
            target = await conn.fetchrow(q["webhook_target"], authorize_id, kind)
            if target is None:
                continue
            # The intent must be the one the operation recorded, for its amount and
            # currency: a signed event about another payment moves nothing.
            recorded = Recorded(int(target["amount_minor"]), target["currency"],
                                target["provider_ref"], str(authorize_id))
            field = mismatch(recorded, intent)
            if field is not None:
                contradicted.append((target["operation_id"], kind, field))
            elif can_change(kind, target["status"], outcome.outcome):
                todo.append((target["operation_id"], outcome, recorded))
    if not todo:  # the connection is back in the pool: a batch needs one of its own
        result = "mismatch" if contradicted else "ignored"
        stored = await _record(core_state(request).webhook_records, db, Delivery(
            event_id, event_type, intent.get("id"), result, raw.decode()), payload)
        if stored:
            _alert(payments, contradicted, intent)
        return _answer(metrics, result if stored else "duplicate")
    async with db.connection() as conn:
        if len(todo) == 1:  # nearly always: one statement, one round trip
            operation_id, outcome, recorded = todo[0]
            applied = await payments.apply_webhook(
                conn, (event_id, event_type, intent.get("id"), payload), operation_id, outcome)
            if applied is None:
                return _answer(metrics, "duplicate")
            results = [(applied, recorded)]
        else:
            results = await _record_and_apply_all(payments, conn, q, todo, event_id,
                                                  event_type, intent, payload)
            if not results:
                return _answer(metrics, "duplicate")
    _alert(payments, contradicted, intent)  # an event for two operations, one contradicted
    for applied_result, follows in results:
        payments.follow_up_soon(applied_result, follows)
    return _answer(metrics, "applied" if any(r["applied"] for r, _ in results) else "ignored")


async def _record_and_apply_all(payments: Payments, conn: Any, q: dict[str, str],
                                todo: list[tuple[uuid.UUID, Outcome, Recorded]], event_id: str,
                                event_type: str, intent: dict[str, Any],
                                payload: Any) -> list[tuple[dict[str, Any], Recorded]]:
    """Several operations in one delivery: one transaction; [] for a duplicate."""
    async with conn.transaction():
        # The record comes first: a concurrent duplicate waits on its key
        # and then finds it, so one delivery applies and the other does not.
        stored = await conn.fetchval(q["record_webhook"], event_id, event_type,
                                     intent.get("id"), "applied", payload)
        if stored is None:
            return []
        return [(await payments.apply(operation_id, outcome, "webhook", conn=conn), recorded)
                for operation_id, outcome, recorded in todo]


async def _record(batcher: WebhookRecords | None, db: Database, delivery: Delivery,
                  payload: Any) -> bool:
    """Record a delivery that changes nothing, with the shard's others when a batcher
    runs; whether it was stored (False: a duplicate)."""
    if batcher is not None:
        stored = await batcher.record(db, delivery)
        if stored is not None:
            return stored
    async with db.connection() as conn:  # alone (no batcher, or its batch failed)
        return bool(await conn.fetchval(
            queries("payments")["record_webhook"], delivery.event_id, delivery.event_type,
            delivery.intent_id, delivery.outcome, payload))


def _alert(payments: Payments, contradicted: list[tuple[uuid.UUID, str, str]],
           intent: dict[str, Any]) -> None:
    for operation_id, kind, field in contradicted:
        payments.mismatch(operation_id, kind, field, "webhook", intent.get("id"))


def _answer(metrics: Any, result: str) -> Response:
    metrics.webhooks.labels(result=result).inc()
    body: dict[str, Any] = {"received": True, "applied": result == "applied"}
    if result == "duplicate":
        body["duplicate"] = True
    return JSONResponse(body)


routes = [Route("/api/webhooks/payments", receive_payment_webhook, methods=["POST"])]
