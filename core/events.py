"""Event routes: list, read, the static venue layout, and operator creation."""

from __future__ import annotations

import hashlib
import uuid
from contextlib import AbstractAsyncContextManager
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.core import request_bodies as bodies
from onsale.core.event_move import move_event
from onsale.core.event_spec import event_spec
from onsale.core.event_store import create_event
from onsale.core.queries import queries
from onsale.core.read_model import (
    event_document,
    event_document_on,
    event_documents,
    operator_event_json,
)
from onsale.core.shard_directory import new_event_home
from onsale.core.state import core_state
from onsale.core.venue_cache import parse_layout_hash, validator
from onsale.core.venues import VenueLayouts
from onsale.kernel.auth import require_admin
from onsale.kernel.beacon_chain import chain_setting
from onsale.kernel.bodies import read_body
from onsale.kernel.inputs import (
    accepts_gzip,
    etag_matches,
    idempotency_key,
    int_path,
    parse_id,
)
from onsale.kernel.problems import Problem
from onsale.kernel.shared import shared


async def list_events(request: Request) -> Response:
    return JSONResponse({"events": await event_documents(core_state(request).shards)})


async def get_event(request: Request) -> Response:
    event_id = int_path(request, "event_id", "event_not_found")
    doc = await event_document(core_state(request).shards, event_id)
    if doc is None:
        raise Problem(404, "event_not_found")
    return JSONResponse(doc)


LAYOUT_CACHE_CONTROL = "public, max-age=31536000, immutable"


def _venues(request: Request) -> VenueLayouts:
    venues = core_state(request).venues
    assert venues is not None, "the venue routes run where core's API runs"
    return venues


async def _layout_response(request: Request, event_id: int, wanted: str | None,
                           missing: str) -> Response:
    """One representation of the event's layout (``wanted``: the hash its URL names,
    else any); 404 ``missing`` if there is none. A conditional request for a layout
    whose hash this process knows is answered before any I/O."""
    venues = _venues(request)
    gzipped = accepts_gzip(request.headers.get("accept-encoding", ""))
    if_none_match = request.headers.get("if-none-match", "")
    known = venues.known_hash(event_id)
    if known is not None:
        if wanted is not None and known != wanted:
            raise Problem(404, missing)
        if if_none_match and etag_matches(if_none_match, validator(known, gzipped)):
            return Response(status_code=304, headers=_layout_headers(known, gzipped))
    layout = await venues.layout(event_id, gzipped)
    if layout is None or (wanted is not None and layout.layout_hash != wanted):
        raise Problem(404, missing)
    headers = _layout_headers(layout.layout_hash, gzipped)
    if if_none_match and etag_matches(if_none_match, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    return Response(layout.body, media_type="application/json", headers=headers)


def _layout_headers(layout_hash: str, gzipped: bool) -> dict[str, str]:
    # Each representation has its own strong validator.
    return {"ETag": validator(layout_hash, gzipped), "Cache-Control": LAYOUT_CACHE_CONTROL,
            "Vary": "Accept-Encoding"}


async def get_venue(request: Request) -> Response:
    """The event's layout (older clients; the event document links to the
    content-addressed URL below, which serves the same bytes)."""
    event_id = int_path(request, "event_id", "event_not_found")
    return await _layout_response(request, event_id, None, "event_not_found")


async def get_venue_at(request: Request) -> Response:
    """The layout at its immutable, content-addressed URL. A malformed event id or
    hash is refused before anything is looked up."""
    event_id = parse_id(request.path_params["event_id"])
    wanted = parse_layout_hash(request.path_params["layout_hash"])
    if event_id is None or wanted is None:
        raise Problem(404, "venue_not_found")
    return await _layout_response(request, event_id, wanted, "venue_not_found")


# Operator requests share the idempotency table under one reserved scope.
OPERATOR_SCOPE = uuid.UUID(int=0)


async def post_event(request: Request) -> Response:
    """Create an event. An optional Idempotency-Key makes a retried create
    return the first event instead of making a second one."""
    require_admin(request)
    settings = shared(request).settings
    body = await read_body(request, bodies.NewEvent, bodies.EVENT_CODES)
    key = request.headers.get("idempotency-key", "").strip() or None
    if key is not None:
        key = idempotency_key(request)
    digest = hashlib.sha256(msgspec.json.encode(body)).hexdigest()  # the fields in order
    q = queries("events")
    shards = core_state(request).shards
    # Connections of their own with the background statement bound: a large venue's
    # seats, inventory and ANALYZE take longer than the request path's 500 ms. The key
    # is the directory's, reserved in its transaction, which commits last
    # (docs/scaling.md#placing-an-event).
    async with shards.directory.slow_connection() as conn, conn.transaction():
        if key is not None:
            # Reserve the key first: a concurrent twin waits here until we commit.
            stored = await conn.fetchrow(q["reserve_key"], OPERATOR_SCOPE, key, digest)
            if stored is None:
                stored = await conn.fetchrow(q["stored_key"], OPERATOR_SCOPE, key)
                if stored["digest"] != digest:
                    raise Problem(409, "idempotency_conflict")
                return JSONResponse(stored["response"], status_code=stored["status_code"],
                                    headers={"Idempotent-Replayed": "true"})
        # Defaults ("on sale now") use database time, the clock holds are judged by.
        spec = event_spec(
            body,
            default_ttl=settings.hold_ttl_seconds,
            default_limit=settings.max_tickets_per_account,
            default_max_hold=settings.max_seats_per_hold,
            now=await conn.fetchval("SELECT now()"),
        )
        home = await new_event_home(conn, spec.shard)
        if not home.dsn:  # the directory's own database: one transaction
            event_id = await create_event(conn, spec, beacon=chain_setting(settings.beacon))
            doc = await event_document_on(conn, event_id)  # in this transaction
        else:
            async with shards.database(home.shard_id).slow_connection() as on_shard:
                event_id = await create_event(conn, spec, shard_id=home.shard_id,
                                              shard=on_shard,
                                              beacon=chain_setting(settings.beacon))
                doc = await event_document_on(on_shard, event_id)
        assert doc is not None  # created just above
        doc = operator_event_json(doc, home.shard_id)
        if key is not None:
            await conn.execute(q["store_key_response"], OPERATOR_SCOPE, key, doc)
    shards.placement = shards.placement.with_event(event_id, home.shard_id)  # no wait
    return JSONResponse(doc, status_code=201, headers={"Location": f"/api/events/{event_id}"})


async def post_move(request: Request) -> Response:
    """Move an event to another shard before its queue opens (operator)."""
    require_admin(request)
    event_id = int_path(request, "event_id", "event_not_found")
    target = (await read_body(request, bodies.MoveRequest, bodies.OPERATOR_CODES)).shard
    shards = core_state(request).shards

    def open_shard(shard_id: int) -> AbstractAsyncContextManager[Any]:
        return shards.database(shard_id).slow_connection()

    async with shards.directory.slow_connection() as conn:
        moved = await move_event(conn, open_shard, event_id, target)
    shards.placement = shards.placement.with_event(event_id, target)  # no wait
    async with shards.database(target).connection() as conn:
        doc = await event_document_on(conn, event_id)
    if doc is None:
        raise Problem(404, "event_not_found")
    return JSONResponse({**operator_event_json(doc, target), "moved_from": moved.source,
                         "rows_copied": moved.rows})

routes = [
    Route("/api/events", list_events, methods=["GET"]),
    Route("/api/events/{event_id}", get_event, methods=["GET"]),
    Route("/api/events/{event_id}/venue", get_venue, methods=["GET"]),
    Route("/api/events/{event_id}/venue/{layout_hash}", get_venue_at, methods=["GET"]),
    Route("/api/ops/events", post_event, methods=["POST"]),
    Route("/api/ops/events/{event_id}/move", post_move, methods=["POST"]),
]
