"""Checkout and order routes: POST /api/holds/{id}/checkout, GET /api/orders/{id}, and
GET /api/orders (``core/order_list.py``)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from onsale.core import request_bodies as bodies
from onsale.core.hold_store import refusals_as_problems
from onsale.core.holds import hold_id_path, hold_shard, require_admission_for_hold
from onsale.core.order_list import list_orders
from onsale.core.payment_state import OperationStatus
from onsale.core.payments import crash_point
from onsale.core.queries import queries
from onsale.core.read_model import checkout_order_json, order_document, ticket_keys
from onsale.core.state import core_state
from onsale.kernel.auth import current_account
from onsale.kernel.bodies import convert, read_body
from onsale.kernel.db import Database
from onsale.kernel.inputs import idempotency_key, parse_uuid
from onsale.kernel.problems import Problem
from onsale.kernel.responses import JSONResponse
from onsale.kernel.shared import shared


def parse_payment_method(body: Mapping[str, Any]) -> str:
    """The PaymentMethod id the page got by tokenizing the card with the provider
    (``pm_…``, the Struct's pattern). Anything else, a card number above all, is refused,
    and neither the answer nor any log repeats it: card numbers never reach core."""
    return convert(body, bodies.CheckoutRequest, bodies.CHECKOUT_CODES).payment_method


def checkout_digest(secret: str, hold_id: uuid.UUID, payment_method: str) -> str:
    """Keyed, so the stored digest does not reveal a card number."""
    doc = json.dumps({"route": "POST /api/holds/{hold_id}/checkout", "scope": str(hold_id),
                      "body": {"payment_method": payment_method}}, sort_keys=True)
    return hmac.new(secret.encode(), doc.encode(), hashlib.sha256).hexdigest()


async def read_order(request: Request, db: Database, order_id: uuid.UUID,
                     account: uuid.UUID) -> dict[str, Any]:
    """The order document (core/read_model.py), its tickets signed, or ``404
    order_not_found``."""
    doc = await order_document(db, order_id, account, ticket_keys(shared(request).settings))
    if doc is None:
        raise Problem(404, "order_not_found")
    return doc


async def post_checkout(request: Request) -> Response:
    started = time.perf_counter()
    account = await current_account(request)
    hold_id = hold_id_path(request)
    key = idempotency_key(request)
    payment_method = (await read_body(request, bodies.CheckoutRequest,
                                      bodies.CHECKOUT_CODES)).payment_method
    await require_admission_for_hold(request, hold_id, account)  # the gate (docs/edge.md)
    payments = core_state(request).payments
    if payments is None:
        raise Problem(503, "payments_unavailable", detail="No payment provider is configured.")
    settings = payments.settings
    db = hold_shard(request, hold_id)  # the order, its operations and outbox go there too
    payments = payments.on(db)
    digest = checkout_digest(settings.secret_key, hold_id, payment_method)
    q = queries("payments")
    async with db.connection() as conn:
        try:
            with refusals_as_problems():
                begun = await conn.fetchrow(
                    q["checkout_begin"], hold_id, account, key, digest,
                    payment_method, settings.payment_grace_seconds,
                    settings.checkout_min_remaining_seconds, settings.payment_first_check_seconds)
        except asyncpg.UniqueViolationError as exc:
            # The same key raced on another event's hold (another advisory lock):
            # a key names one request, so this is the other request.
            raise Problem(409, "idempotency_conflict") from exc
        # A new checkout's operation was created PENDING by the statement above; only a
        # replay needs to read where its operation stands.
        status = OperationStatus.PENDING
        if begun["replayed"]:
            status = (await conn.fetchrow(q["operation"], begun["operation_id"]))["status"]
    crash_point(settings, "after_checkout_commit")
    # A new checkout authorizes now; a replay of one whose answer never came
    # re-sends the same operation (same idempotency key: never a second charge).
    body = None
    if status in (OperationStatus.PENDING, OperationStatus.UNKNOWN):
        result = await payments.authorize(begun["operation_id"], begun["order_id"],
                                          begun["amount_minor"], begun["currency"],
                                          payment_method)
        body = checkout_order_json(result)  # the order as the sale left it
    if body is None:
        body = await read_order(request, db, begun["order_id"], account)
    core_state(request).metrics.checkout_latency.observe(time.perf_counter() - started)
    headers = {"Location": f"/api/orders/{body['order_id']}"}
    if begun["replayed"]:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(body, status_code=200 if begun["replayed"] else 201, headers=headers)


async def get_order(request: Request) -> Response:
    account = await current_account(request)
    order_id = parse_uuid(request.path_params["order_id"])
    if order_id is None:
        raise Problem(404, "order_not_found")
    db = core_state(request).shards.for_id(order_id, "order_not_found")
    return JSONResponse(await read_order(request, db, order_id, account))


routes = [
    Route("/api/holds/{hold_id}/checkout", post_checkout, methods=["POST"]),
    Route("/api/orders", list_orders, methods=["GET"]),
    Route("/api/orders/{order_id}", get_order, methods=["GET"]),
]
