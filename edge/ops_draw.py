"""``POST /api/ops/events/{id}/draw/fallback``: the operator draws with the seed alone
when the committed beacon round stays unpublished (docs/edge.md#when-the-beacon-does-not-
answer). Allowed only ``ONSALE_BEACON_GRACE_SECONDS`` after the round was due, only before
the round is recorded, and recorded for everyone to see: the draw document and the
event's page say the draw used the seed alone, and why. Whichever is written first, the
round or the fallback, stands (``record_beacon_outcome``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.edge.draw_routes import beacon_part
from onsale.edge.queries import queries
from onsale.edge.request_bodies import DRAW_FALLBACK_CODES, DrawFallback
from onsale.edge.runtime import edge_state
from onsale.edge.shard_copy import copy_to_shard
from onsale.kernel.auth import require_admin
from onsale.kernel.beacon_chain import committed_chain, round_to_draw
from onsale.kernel.bodies import read_body
from onsale.kernel.inputs import int_path
from onsale.kernel.openapi import EVENT_ID, json_body, problem, request_body
from onsale.kernel.problems import Problem
from onsale.kernel.timefmt import utc_iso


def fallback_refusal(committed: dict[str, Any] | None, closed_at: float | None,
                     onsale_at: float, outcome: dict[str, Any] | None, revealed: bool,
                     now: float, grace: int) -> Problem | None:
    """Why the operator may not draw with the seed alone now (None: they may)."""
    if committed is None:
        return Problem(409, "beacon_not_committed",
                       detail="This event's draw is by the seed alone already.")
    if outcome is not None or revealed:
        return Problem(409, "beacon_recorded",
                       detail="The draw has its beacon round (or a fallback) already.")
    number = round_to_draw(committed, onsale_at if closed_at is None else closed_at)
    allowed_at = committed_chain(committed).time_of(number) + grace
    if now < allowed_at:
        return Problem(409, "beacon_not_overdue", round=number,
                       allowed_at=utc_iso(datetime.fromtimestamp(allowed_at, UTC)),
                       detail=f"Round {number} is not {grace} s overdue yet: the draw waits "
                              "for it until then.")
    return None


async def fallback(request: Request) -> Response:
    require_admin(request)
    edge = edge_state(request)
    event_id = int_path(request, "event_id", "event_not_found")
    body = await read_body(request, DrawFallback, DRAW_FALLBACK_CODES)
    q = queries("queue")
    async with edge.db.connection() as conn:
        row = await conn.fetchrow(q["draw_beacon"], event_id)
        if row is None:
            raise Problem(404, "event_not_found")
        closed = row["draw_closed_at"]
        refusal = fallback_refusal(row["beacon_commitment"],
                                   None if closed is None else closed.timestamp(),
                                   row["onsale_at"].timestamp(), row["beacon_outcome"],
                                   row["draw_seed"] is not None, time.time(),
                                   edge.settings.beacon_grace_seconds)
        if refusal is not None:
            raise refusal
        decided = {"fallback": {"reason": body.reason,
                                "at": utc_iso(datetime.now(UTC))}}
        stands = await conn.fetchval(q["record_beacon_outcome"], event_id, decided)
        if stands is None or "fallback" not in stands:
            raise Problem(409, "beacon_recorded",
                          detail="The beacon round was recorded first: the draw uses it.")
        row = await conn.fetchrow(q["draw_beacon"], event_id)
    await copy_to_shard(edge, event_id)
    return JSONResponse(beacon_part(row))


routes = [Route("/api/ops/events/{event_id}/draw/fallback", fallback, methods=["POST"])]

DRAW_OPS_PATHS: dict[str, dict[str, Any]] = {
    "/api/ops/events/{event_id}/draw/fallback": {"post": {
        "summary": "Draw with the seed alone: the committed beacon round stayed unpublished",
        "description": "Only ONSALE_BEACON_GRACE_SECONDS (120 by default) after the "
                       "round was due, and only before it is recorded (409 otherwise). "
                       "Recorded in the draw document and shown to shoppers with the "
                       "reason. The admitter draws at its next tick.",
        "security": [{"admin": []}], "parameters": [EVENT_ID],
        "requestBody": request_body("DrawFallback"),
        "responses": {"200": json_body("DrawBeacon", "The draw's beacon, fallen back"),
                      "400": problem("invalid_request", "invalid_json"),
                      "404": problem("event_not_found"),
                      "409": problem("beacon_not_committed", "beacon_recorded",
                                     "beacon_not_overdue"),
                      "503": problem("queue_unavailable")}}},
}
