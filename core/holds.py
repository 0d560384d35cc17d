"""Hold routes: create (seats or best available), read, release."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.core.hold_rules import effective_status, parse_hold_request, request_digest
from onsale.core.hold_store import create_hold, problem_from_db
from onsale.core.queries import queries
from onsale.edge.gate import Gate
from onsale.kernel.db import Database
from onsale.kernel.inputs import idempotency_key, int_path, json_object, parse_uuid
from onsale.kernel.problems import Problem
from onsale.kernel.sessions import current_account
from onsale.kernel.timefmt import utc_iso


def hold_id_path(request: Request) -> uuid.UUID:
    hold_id = parse_uuid(request.path_params["hold_id"])
    if hold_id is None:
        raise Problem(404, "hold_not_found")
    return hold_id


async def post_hold(request: Request) -> Response:
    account = await current_account(request)
    event_id = int_path(request, "event_id", "event_not_found")
    key = idempotency_key(request)
    hold_request = parse_hold_request(await json_object(request))
    await request.app.state.gate.check(request, event_id, account)  # before any core work
    digest = request_digest("POST /api/events/{event_id}/holds", str(event_id), hold_request)
    db: Database = request.app.state.db
    async with db.connection() as conn:
        outcome = await create_hold(
            conn, request.app.state.metrics, event_id, account, key, digest, hold_request,
        )
    headers = {"Location": f"/api/holds/{outcome.body['hold_id']}"}
    if outcome.replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(outcome.body, status_code=outcome.status_code, headers=headers)


def hold_json(row: Any) -> dict[str, Any]:
    return {
        "hold_id": str(row["hold_id"]),
        "event_id": row["event_id"],
        "status": effective_status(row["status"], row["expires_at"], row["db_now"]),
        "expires_at": utc_iso(row["expires_at"]),
        "seats": row["seats"],
        "amount_minor": row["amount_minor"],
        "currency": row["currency"],
    }


async def get_hold(request: Request) -> Response:
    account = await current_account(request)
    hold_id = hold_id_path(request)
    db: Database = request.app.state.db
    async with db.connection() as conn:
        row = await conn.fetchrow(queries("holds")["get_hold"], hold_id, account)
    if row is None:
        raise Problem(404, "hold_not_found")
    return JSONResponse(hold_json(row))


async def delete_hold(request: Request) -> Response:
    account = await current_account(request)
    hold_id = hold_id_path(request)
    db: Database = request.app.state.db
    q = queries("holds")
    async with db.connection() as conn:
        try:
            await conn.execute(q["release_hold"], hold_id, account)
        except asyncpg.PostgresError as exc:
            problem = problem_from_db(exc)
            if problem is None:
                raise
            raise problem from exc
        row = await conn.fetchrow(q["get_hold"], hold_id, account)
    return JSONResponse(hold_json(row))


async def require_admission_for_hold(request: Request, hold_id: uuid.UUID,
                                     account: uuid.UUID) -> None:
    """The gate for routes that name a hold, not an event (checkout): no token
    at all is refused before core is touched; otherwise the token must be for
    the hold's event (one indexed read finds it)."""
    if not Gate.presented(request):
        raise Problem(403, "admission_required")
    db: Database = request.app.state.db
    async with db.connection() as conn:
        event_id = await conn.fetchval(queries("holds")["hold_event"], hold_id, account)
    if event_id is None:
        raise Problem(404, "hold_not_found")
    await request.app.state.gate.check(request, event_id, account)


async def hold_resource(request: Request) -> Response:
    return await (delete_hold(request) if request.method == "DELETE" else get_hold(request))


routes = [
    Route("/api/events/{event_id}/holds", post_hold, methods=["POST"]),
    Route("/api/holds/{hold_id}", hold_resource, methods=["GET", "DELETE"]),
]
