"""Hold routes: create (seats or best available), read, release."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from onsale.core import request_bodies as bodies
from onsale.core.hold_rules import GARequest, SeatsRequest, request_digest
from onsale.core.hold_rules import hold_request as parse_hold
from onsale.core.hold_store import create_batched_hold, create_hold, refusals_as_problems
from onsale.core.queries import queries
from onsale.core.read_model import hold_document, hold_document_on
from onsale.core.state import core_state
from onsale.kernel.auth import current_account
from onsale.kernel.bodies import read_body
from onsale.kernel.db import Database
from onsale.kernel.inputs import idempotency_key, int_path, parse_uuid
from onsale.kernel.problems import Problem
from onsale.kernel.responses import JSONResponse


def hold_id_path(request: Request) -> uuid.UUID:
    hold_id = parse_uuid(request.path_params["hold_id"])
    if hold_id is None:
        raise Problem(404, "hold_not_found")
    return hold_id


def hold_shard(request: Request, hold_id: uuid.UUID) -> Database:
    """The shard that made the hold: its id names it (docs/scaling.md#routing)."""
    return core_state(request).shards.for_id(hold_id, "hold_not_found")


async def post_hold(request: Request) -> Response:
    account = await current_account(request)
    event_id = int_path(request, "event_id", "event_not_found")
    key = idempotency_key(request)
    hold_request = parse_hold(await read_body(request, bodies.HoldRequest, bodies.HOLD_CODES))
    await core_state(request).admission.check(request, event_id, account)  # before any core work
    digest = request_digest("POST /api/events/{event_id}/holds", str(event_id), hold_request)
    state = core_state(request)
    db = await state.shards.for_event(event_id)  # the event's shard: one transaction there
    batcher = (state.ga_batcher if isinstance(hold_request, GARequest)
               else state.seat_batcher if isinstance(hold_request, SeatsRequest) else None)
    if batcher is not None:
        assert isinstance(hold_request, GARequest | SeatsRequest)
        outcome = await create_batched_hold(db, batcher, state.metrics, event_id, account,
                                            key, digest, hold_request)
    else:
        async with db.connection() as conn:
            outcome = await create_hold(conn, state.metrics, event_id, account, key, digest,
                                        hold_request)
    headers = {"Location": f"/api/holds/{outcome.body['hold_id']}"}
    if outcome.replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(outcome.body, status_code=outcome.status_code, headers=headers)


async def get_hold(request: Request) -> Response:
    account = await current_account(request)
    hold_id = hold_id_path(request)
    doc = await hold_document(hold_shard(request, hold_id), hold_id, account)
    if doc is None:
        raise Problem(404, "hold_not_found")
    return JSONResponse(doc)


async def delete_hold(request: Request) -> Response:
    account = await current_account(request)
    hold_id = hold_id_path(request)
    async with hold_shard(request, hold_id).connection() as conn:
        with refusals_as_problems():
            await conn.execute(queries("holds")["release_hold"], hold_id, account)
        doc = await hold_document_on(conn, hold_id, account)
    if doc is None:
        raise Problem(404, "hold_not_found")
    return JSONResponse(doc)


async def require_admission_for_hold(request: Request, hold_id: uuid.UUID,
                                     account: uuid.UUID) -> None:
    """The gate for routes that name a hold, not an event (checkout): no token
    at all is refused before core is touched; otherwise the token must be for
    the hold's event (one indexed read finds it)."""
    if not core_state(request).admission.presented(request):
        raise Problem(403, "admission_required")
    async with hold_shard(request, hold_id).connection() as conn:
        event_id = await conn.fetchval(queries("holds")["hold_event"], hold_id, account)
    if event_id is None:
        raise Problem(404, "hold_not_found")
    await core_state(request).admission.check(request, event_id, account)


async def hold_resource(request: Request) -> Response:
    return await (delete_hold(request) if request.method == "DELETE" else get_hold(request))


routes = [
    Route("/api/events/{event_id}/holds", post_hold, methods=["POST"]),
    Route("/api/holds/{hold_id}", hold_resource, methods=["GET", "DELETE"]),
]
