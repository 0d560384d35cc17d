"""The OpenAPI path of the seat-map snapshot; the composition root merges it into the
document of any app that serves it (role seatmap, onsale dev). The WebSocket
(``/ws/events/{event_id}/seatmap``) is outside OpenAPI: docs/seatmap-protocol.md."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta, Struct

from onsale.kernel.bodies import components
from onsale.kernel.openapi import EVENT_ID, ApiSpec, json_body, problem

SEATMAP_PATHS: dict[str, dict[str, Any]] = {
    "/api/events/{event_id}/seatmap": {"get": {
        "summary": "The seat map's latest snapshot (one status digit per seat, hold expiries); "
                   "ETag and Seatmap-Version = its version, max-age 1. Live deltas: the "
                   "WebSocket /ws/events/{event_id}/seatmap?since=VERSION "
                   "(docs/seatmap-protocol.md)",
        "parameters": [EVENT_ID],
        "responses": {
            "200": json_body("SeatmapSnapshot", "The snapshot (gzip when accepted); "
                                            "Seatmap-Source: stream, or database while change "
                                            "capture is down (then poll at max-age)"),
            "304": {"description": "Not modified"},
            "401": problem("authentication_required"),
            "403": problem("admission_required"),
            "404": problem("event_not_found"),
            "503": problem("inventory_unavailable")}}},
}

class SeatmapSnapshot(Struct):
    """The seat map's latest snapshot (docs/seatmap-protocol.md)."""

    type: Literal["snapshot"]
    event_id: int
    version: Annotated[str, Meta(description="Opaque; compare for equality only")]
    seat_count: int
    status: Annotated[str, Meta(pattern="^[0-4]*$", description=(
        "Character i is seat i+1: 0 AVAILABLE, 1 HELD, 2 PAYMENT_PENDING, 3 SOLD, "
        "4 BLOCKED"))]
    held: Annotated[list[int], Meta(description=(
        "HELD seats as (seat id, expiry in Unix seconds) pairs, each number the difference "
        "from the previous pair's"))]


SEATMAP_SCHEMAS: dict[str, Any] = components([SeatmapSnapshot])

SEATMAP_API = ApiSpec("seatmap", SEATMAP_PATHS, SEATMAP_SCHEMAS)
