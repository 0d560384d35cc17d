"""The seat-map endpoints: the HTTP snapshot and the WebSocket of deltas.

``GET /api/events/{event_id}/seatmap`` serves the latest snapshot stored in
Redis, gzip-compressed once by the consumer, with ``ETag`` = its version and
``Cache-Control: max-age=1`` so a CDN absorbs reloads. While change capture
is down (no live consumer for the event's shard) it reads the event's shard
instead, at most once per ``ONSALE_SEATMAP_FALLBACK_MAX_AGE_S`` per process, and says so
(``Seatmap-Source: database``, a longer max-age): clients poll it at that
rate. ``WS /ws/events/{event_id}/seatmap?since=VERSION`` is documented in
docs/seatmap-protocol.md.

Both routes call ``seatmap_state(connection).gate(connection, event_id)`` first: the
admission gate plugs in there (the composition root, onsale/compose.py); the default
admits everyone. The socket's own limits (origin, sockets per account, what a client may
send, the admission's expiry and revocation) are in seatmap/sockets.py and
docs/security.md#websockets.
"""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from onsale.kernel.db import Database
from onsale.kernel.inputs import accepts_gzip, etag_matches, parse_id
from onsale.kernel.problems import Problem, ProblemResponse
from onsale.kernel.shards import ShardSet
from onsale.seatmap.bus import Bus
from onsale.seatmap.clients import Client, DirectClient, make_client
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.hub import Hub
from onsale.seatmap.pgoutput import format_lsn, parse_lsn
from onsale.seatmap.queries import queries
from onsale.seatmap.sequencer import control_frame
from onsale.seatmap.snapshot import SeatMap, encode, visible
from onsale.seatmap.sockets import Admitted, Inbound, origin_allowed

# Refuses with a ``Problem``; an admitted socket is watched through what it returns
# (None: nothing to watch, e.g. the default gate).
Gate = Callable[[HTTPConnection, int], Awaitable[Admitted | None]]


async def allow_all(connection: HTTPConnection, event_id: int) -> None:
    """The default gate: everyone may see the seat map."""


@dataclass
class Seatmap:
    """What the routes need (``seatmap_state``)."""

    settings: SeatmapSettings
    bus: Bus
    hub: Hub
    db: Database | None
    gate: Gate = allow_all
    fallback: dict[int, tuple[float, str, bytes]] = field(default_factory=dict)
    locks: dict[int, asyncio.Lock] = field(default_factory=dict)
    origins: frozenset[str] | None = None  # handshakes from other origins are refused
    shards: ShardSet | None = None  # the fallback reads the event's shard (None: ``db``)


def seatmap_state(connection: HTTPConnection) -> Seatmap:
    """The seat map's state in this process (set by the composition root's lifespan)."""
    return cast(Seatmap, connection.app.state.seatmap)


async def get_seatmap(request: Request) -> Response:
    event_id = _event_id(request)
    sm = seatmap_state(request)
    await sm.gate(request, event_id)
    blob = None
    if sm.hub.live_for(event_id):
        try:
            blob = await sm.bus.snapshot_blob(event_id)
        except Exception:  # Redis down: the database answers
            blob = None
    source, max_age = "stream", 1
    if blob is None:
        blob = await _from_database(sm, event_id)
        source, max_age = "database", sm.settings.fallback_max_age_s
    version, body = blob
    gzipped = accepts_gzip(request.headers.get("accept-encoding", ""))
    etag = f'"{version}-gzip"' if gzipped else f'"{version}"'
    headers = {"ETag": etag, "Cache-Control": f"public, max-age={max_age}",
               "Vary": "Accept-Encoding", "Seatmap-Version": version, "Seatmap-Source": source}
    if etag_matches(request.headers.get("if-none-match", ""), etag):
        return Response(status_code=304, headers=headers)
    if gzipped:
        headers["Content-Encoding"] = "gzip"
        return Response(body, media_type="application/json", headers=headers)
    return Response(gzip.decompress(body), media_type="application/json", headers=headers)


async def _from_database(sm: Seatmap, event_id: int) -> tuple[str, bytes]:
    """The table itself, once per max-age per process (single flight)."""
    async with sm.locks.setdefault(event_id, asyncio.Lock()):
        cached = sm.fallback.get(event_id)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1], cached[2]
        db = await sm.shards.for_event(event_id) if sm.shards is not None else sm.db
        if db is None:
            raise Problem(503, "inventory_unavailable")
        q = queries("cdc")
        async with db.connection() as conn, conn.transaction(
                isolation="repeatable_read", readonly=True):
            rows = await conn.fetch(q["event_inventory"], event_id)
            places = await conn.fetch(q["event_places"], event_id)
            lsn = parse_lsn(await conn.fetchval(q["current_lsn"]))
        if not rows and not places:
            raise Problem(404, "event_not_found")
        # The insert position after the read: no delta starts there, so a client
        # that resumes from it gets a snapshot.
        seat_map = SeatMap(event_id, lsn)
        for row in rows:
            seat_map.set(row["seat_id"], *visible(row["status"], row["hold_expires_at"]))
        for row in places:
            seat_map.set_places(row["tier_id"], row["stripe"], row["available"])
        body = gzip.compress(encode(seat_map), compresslevel=6, mtime=0)
        sm.hub.metrics.fallback_snapshots.inc()
        ttl = sm.settings.fallback_max_age_s
        sm.fallback[event_id] = (time.monotonic() + ttl, format_lsn(lsn), body)
        return format_lsn(lsn), body


def _event_id(connection: HTTPConnection) -> int:
    try:
        value = parse_id(connection.path_params["event_id"]) or 0  # ASCII digits only: '٣' is 404
    except (TypeError, ValueError):
        raise Problem(404, "event_not_found") from None
    if not 0 < value < 2**63:
        raise Problem(404, "event_not_found")
    return value


async def _watch(websocket: WebSocket, client: Client, sm: Seatmap) -> None:
    """Clients send nothing meaningful; this notices the close (or a dead socket) at
    once, and closes a socket whose client sends too much (1009) or too often (1008)."""
    limits = Inbound(sm.settings.client_max_message_bytes,
                     sm.settings.client_max_messages_per_s)
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes") or message.get("text") or b""
            size = len(data) if isinstance(data, bytes) else len(data.encode())
            verdict = limits.receive(size)
            if verdict is not None:
                sm.hub.metrics.socket_closes.labels(verdict[1]).inc()
                sm.hub.admitted.pop(client, None)
                client.end(*verdict)
                return
    finally:
        client.disconnected()


async def _refuse(websocket: WebSocket, sm: Seatmap | None, problem: Problem) -> None:
    if sm is not None:
        sm.hub.metrics.refusals.labels(problem.code).inc()
    headers = {"Retry-After": "1"} if problem.status in (429, 503) else None
    await websocket.send_denial_response(ProblemResponse(problem, headers=headers))


async def seatmap_socket(websocket: WebSocket) -> None:
    sm: Seatmap | None = None
    try:
        event_id = _event_id(websocket)
        sm = seatmap_state(websocket)
        if not origin_allowed(websocket.headers.get("origin"), sm.origins):
            raise Problem(403, "cross_site_request",
                          detail="Seat-map sockets are accepted only from this site's pages.")
        admitted = await sm.gate(websocket, event_id)
    except Problem as problem:
        await _refuse(websocket, sm, problem)
        return
    # Counted before any await, so two handshakes cannot both pass the cap.
    if admitted is not None and not sm.hub.per_account.take(admitted.account):
        await _refuse(websocket, sm, Problem(
            429, "too_many_sockets",
            detail=f"At most {sm.settings.max_sockets_per_account} seat-map connections per "
                   "account; close another tab, or poll the snapshot instead."))
        return
    try:
        await _serve_socket(websocket, sm, event_id, admitted)
    finally:
        if admitted is not None:
            sm.hub.per_account.give(admitted.account)


async def _serve_socket(websocket: WebSocket, sm: Seatmap, event_id: int,
                        admitted: Admitted | None) -> None:
    try:
        since: int | None = parse_lsn(websocket.query_params.get("since", ""))
    except ValueError:
        since = None
    try:
        channel = await sm.hub.channel(event_id)
    except Exception:  # Redis unreachable: same answer as no seat map
        sm.hub.metrics.stream_errors.inc()
        channel = None
    await websocket.accept()
    client = make_client(websocket, sm.settings)
    # A channel mid-reload is waited for as long as a heartbeat's interval.
    how = None if channel is None else await channel.admit(
        client, since, within=sm.settings.client_heartbeat_s)
    if channel is None or how is None:  # no seat map in Redis: poll the HTTP snapshot
        await websocket.send_text(control_frame("unavailable").decode())
        await websocket.close(1013)
        return
    sm.hub.metrics.connections.labels(
        "direct" if isinstance(client, DirectClient) else "queued").inc()
    sm.hub.metrics.catch_ups.labels(how).inc()
    sm.hub.metrics.clients.inc()
    if admitted is not None:  # the hub closes it when the admission expires or lapses
        sm.hub.admitted[client] = admitted
    watch = asyncio.create_task(_watch(websocket, client, sm))
    try:
        await client.run()
    except (WebSocketDisconnect, OSError, RuntimeError):
        pass  # gone; the channel forgets it below
    finally:
        sm.hub.metrics.clients.dec()
        channel.clients.discard(client)
        sm.hub.admitted.pop(client, None)
        watch.cancel()


def seatmap_routes() -> list[BaseRoute]:
    return [
        Route("/api/events/{event_id}/seatmap", get_seatmap, methods=["GET"]),
        WebSocketRoute("/ws/events/{event_id}/seatmap", seatmap_socket),
    ]
