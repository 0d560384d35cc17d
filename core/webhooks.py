"""POST /api/webhooks/payments: verified provider events move payment state.

A bad or stale signature is refused (400) before anything is read. Each
event is recorded by its provider id in the same transaction that applies
it, so a duplicate delivery changes nothing; the apply function accepts only
forward transitions, so a late or reordered event cannot move state back.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from core.db import Database, queries
from core.payment_rules import can_change, webhook_outcomes
from core.payments import Payments
from core.problems import Problem
from psp.signature import HEADER, SignatureError, verify

SIGNATURE_TOLERANCE_SECONDS = 300


def parse_event(raw: bytes) -> tuple[str, str, dict[str, Any], uuid.UUID]:
    """(event id, type, payment intent, the authorization's operation id)."""
    try:
        event = json.loads(raw)
        event_id, event_type = event["id"], event["type"]
        intent = event["data"]["object"]
        operation_id = uuid.UUID(intent["metadata"]["operation_id"])
    except (ValueError, KeyError, TypeError):
        raise Problem(400, "invalid_webhook",
                      detail="Expected an event with id, type and data.object.metadata."
                             "operation_id.") from None
    if not (isinstance(event_id, str) and isinstance(event_type, str)
            and isinstance(intent, dict)):
        raise Problem(400, "invalid_webhook", detail="id and type must be strings.")
    return event_id, event_type, intent, operation_id


async def receive_payment_webhook(request: Request) -> Response:
    payments: Payments | None = request.app.state.payments
    if payments is None:
        raise Problem(503, "payments_unavailable")
    metrics = request.app.state.metrics
    raw = await request.body()
    try:
        verify(payments.settings.psp_webhook_secret, raw, request.headers.get(HEADER, ""),
               now=time.time(), tolerance=SIGNATURE_TOLERANCE_SECONDS)
    except SignatureError as exc:
        metrics.webhooks.labels(result="bad_signature").inc()
        raise Problem(400, "invalid_signature", detail=exc.reason) from None
    event_id, event_type, intent, authorize_id = parse_event(raw)
    q = queries("payments")
    db: Database = request.app.state.db
    results: list[dict[str, Any]] = []
    async with db.connection() as conn, conn.transaction():
        recorded = await conn.fetchval(q["record_webhook"], event_id, event_type,
                                       intent.get("id"), json.loads(raw))
        if recorded is None:
            metrics.webhooks.labels(result="duplicate").inc()
            return JSONResponse({"received": True, "duplicate": True})
        for kind, outcome in webhook_outcomes(event_type, intent):
            target = await conn.fetchrow(q["webhook_target"], authorize_id, kind)
            # Most events confirm what the response already applied: skip the
            # locking apply when it could not change anything.
            if target is None or not can_change(kind, target["status"], outcome.outcome):
                continue
            results.append(await payments.apply(target["operation_id"], outcome, "webhook",
                                                conn=conn))
        applied = any(r["applied"] for r in results)
        await conn.execute(q["webhook_outcome"], event_id, "applied" if applied else "ignored")
    for result in results:
        payments.follow_up_soon(result)
    metrics.webhooks.labels(result="applied" if applied else "ignored").inc()
    return JSONResponse({"received": True, "applied": applied})


routes = [Route("/api/webhooks/payments", receive_payment_webhook, methods=["POST"])]
