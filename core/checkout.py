"""Checkout and order routes: POST /api/holds/{id}/checkout, GET /api/orders/{id}."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
import uuid
from typing import Any

import asyncpg
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.core.hold_store import problem_from_db
from onsale.core.holds import hold_id_path, require_admission_for_hold
from onsale.core.payment_rules import mask_payment_method
from onsale.core.payments import Payments, crash_point
from onsale.core.queries import queries
from onsale.kernel.db import Database
from onsale.kernel.inputs import idempotency_key, json_object, parse_uuid
from onsale.kernel.problems import Problem
from onsale.kernel.sessions import current_account
from onsale.kernel.timefmt import utc_iso

_PAYMENT_METHOD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ -]{0,62}[A-Za-z0-9_]$")


def parse_payment_method(body: dict[str, Any]) -> str:
    value = body.get("payment_method")
    if not isinstance(value, str) or not _PAYMENT_METHOD.match(value):
        raise Problem(400, "invalid_payment_method",
                      detail="payment_method must be a card number or a payment method id "
                             "(2-64 letters, digits, spaces, '-' or '_').")
    extra = set(body) - {"payment_method"}
    if extra:
        raise Problem(400, "invalid_request", detail=f"Unknown fields: {', '.join(sorted(extra))}.")
    return value


def normalize_payment_method(value: str) -> str:
    """A card number without its spaces or dashes; anything else as given. The
    same form goes into the idempotency digest and to the provider."""
    compact = value.replace(" ", "").replace("-", "")
    return compact if compact.isdigit() else value


def checkout_digest(secret: str, hold_id: uuid.UUID, payment_method: str) -> str:
    """Keyed, so the stored digest does not reveal a card number."""
    doc = json.dumps({"route": "POST /api/holds/{hold_id}/checkout", "scope": str(hold_id),
                      "body": {"payment_method": payment_method}}, sort_keys=True)
    return hmac.new(secret.encode(), doc.encode(), hashlib.sha256).hexdigest()


def order_json(row: Any) -> dict[str, Any]:
    return {
        "order_id": str(row["order_id"]),
        "hold_id": str(row["hold_id"]),
        "event_id": row["event_id"],
        "order_status": row["status"],
        "payment_status": row["payment_status"],
        "next_action": row["next_action"],
        "amount_minor": row["amount_minor"],
        "currency": row["currency"],
        "seats": row["seats"],
        "tickets": row["tickets"],
        "cancel_reason": row["cancel_reason"],
        "hold_expires_at": utc_iso(row["expires_at"]),
        "payment_deadline": utc_iso(row["grace_until"]) if row["grace_until"] else None,
        "created_at": utc_iso(row["created_at"]),
        "updated_at": utc_iso(row["updated_at"]),
    }


async def read_order(db: Database, order_id: uuid.UUID, account: uuid.UUID) -> dict[str, Any]:
    async with db.connection() as conn:
        row = await conn.fetchrow(queries("payments")["order_for_account"], order_id, account)
    if row is None:
        raise Problem(404, "order_not_found")
    return order_json(row)


async def post_checkout(request: Request) -> Response:
    started = time.perf_counter()
    account = await current_account(request)
    hold_id = hold_id_path(request)
    key = idempotency_key(request)
    payment_method = normalize_payment_method(parse_payment_method(await json_object(request)))
    await require_admission_for_hold(request, hold_id, account)  # the gate (docs/edge.md)
    payments: Payments | None = request.app.state.payments
    if payments is None:
        raise Problem(503, "payments_unavailable", detail="No payment provider is configured.")
    settings = payments.settings
    db: Database = request.app.state.db
    digest = checkout_digest(settings.secret_key, hold_id, payment_method)
    q = queries("payments")
    async with db.connection() as conn:
        try:
            begun = await conn.fetchrow(
                q["checkout_begin"], hold_id, account, key, digest,
                mask_payment_method(payment_method), settings.payment_grace_seconds,
                settings.checkout_min_remaining_seconds, settings.payment_first_check_seconds)
        except asyncpg.UniqueViolationError as exc:
            # The same key raced on another event's hold (another advisory lock):
            # a key names one request, so this is the other request.
            raise Problem(409, "idempotency_conflict") from exc
        except asyncpg.PostgresError as exc:
            problem = problem_from_db(exc)
            if problem is None:
                raise
            raise problem from exc
        operation = await conn.fetchrow(q["operation"], begun["operation_id"])
    crash_point(settings, "after_checkout_commit")
    # A new checkout authorizes now; a replay of one whose answer never came
    # re-sends the same operation (same idempotency key: never a second charge).
    if operation["status"] in ("PENDING", "UNKNOWN"):
        await payments.authorize(begun["operation_id"], begun["order_id"],
                                 begun["amount_minor"], begun["currency"], payment_method)
    body = await read_order(db, begun["order_id"], account)
    request.app.state.metrics.checkout_latency.observe(time.perf_counter() - started)
    headers = {"Location": f"/api/orders/{body['order_id']}"}
    if begun["replayed"]:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(body, status_code=200 if begun["replayed"] else 201, headers=headers)


async def get_order(request: Request) -> Response:
    account = await current_account(request)
    order_id = parse_uuid(request.path_params["order_id"])
    if order_id is None:
        raise Problem(404, "order_not_found")
    return JSONResponse(await read_order(request.app.state.db, order_id, account))


routes = [
    Route("/api/holds/{hold_id}/checkout", post_checkout, methods=["POST"]),
    Route("/api/orders/{order_id}", get_order, methods=["GET"]),
]
