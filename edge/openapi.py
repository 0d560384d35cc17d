"""The OpenAPI paths of the edge routes; the composition root merges them into the
document of any app that serves them (role edge, onsale dev)."""

from __future__ import annotations

from typing import Any

from onsale.edge.ops_arrivals import ARRIVALS_PATHS
from onsale.edge.ops_dashboard import OPS_PATHS
from onsale.edge.ops_draw import DRAW_OPS_PATHS
from onsale.edge.request_bodies import DrawFallback, FairnessScenario, QueueJoin, QueueUpdate
from onsale.edge.response_bodies import RESPONSE_BODIES
from onsale.kernel.bodies import components
from onsale.kernel.openapi import EVENT_ID, ApiSpec, json_body, problem, request_body

_ADMIN: list[dict[str, list[str]]] = [{"admin": []}]
_TICKET = {"name": "Queue-Ticket", "in": "header", "required": False,
           "schema": {"type": "string"},
           "description": "The ticket from the join answer (browsers send the "
                          "onsale_queue_{event_id} cookie instead)"}
_OPS_ERRORS = {"401": problem("admin_required"), "404": problem("event_not_found"),
               "429": problem("rate_limited"),
               "503": problem("queue_unavailable", "inventory_unavailable")}

EDGE_PATHS: dict[str, dict[str, Any]] = {
    "/api/events/{event_id}/queue": {
        "post": {
            "summary": "Join the event's queue (idempotent per account: every tab and device "
                       "gets the same place); sets the ticket cookie",
            "parameters": [EVENT_ID],
            "requestBody": request_body("QueueJoin", required=False),
            "responses": {
                "200": json_body("QueueStatus", "The place; admitted at once for passthrough"),
                "400": problem("invalid_request", "invalid_json"),
                "401": problem("authentication_required"),
                "403": problem("pow_required", "pow_invalid", "pow_replayed",
                               "risk_refused"),
                "404": problem("event_not_found"),
                "409": problem("queue_not_open", "queue_closed"),
                "429": problem("rate_limited"),
                "503": problem("queue_unavailable", "inventory_unavailable")}},
        "get": {
            "summary": "Poll the place (no Redis round trip while waiting); once admitted, the "
                       "admission token (the session must be live: 401 once signed out)",
            "parameters": [EVENT_ID, _TICKET],
            "responses": {
                "200": json_body("QueueStatus"),
                "401": problem("authentication_required"),
                "404": problem("not_in_queue", "event_not_found"),
                "429": problem("rate_limited"),
                "503": problem("queue_unavailable", "session_unavailable")}}},
    "/api/events/{event_id}/queue/draw": {"get": {
        "summary": "The random draw: commitment before the sale, seed and participants after",
        "description": "Before the seed is revealed: the commitment, `Cache-Control: "
                       "no-store`. Once published a page never changes: strong `ETag`, "
                       "`Cache-Control: public, max-age=31536000, immutable`, and "
                       "`If-None-Match` answered 304. `next` links the following page. "
                       "Each parameter at most once, in ASCII digits; a page past the end "
                       "(2^31-1 at most) is 404 draw_page_not_found. Throttled per "
                       "client address (`ONSALE_DRAW_LIMIT_IP`, 120 a minute by default).",
        "parameters": [EVENT_ID,
                       {"name": "page", "in": "query", "schema": {
                           "type": "integer", "minimum": 1, "maximum": 2**31 - 1,
                           "default": 1}},
                       {"name": "per_page", "in": "query",
                        "description": "At most ONSALE_DRAW_PAGE_MAX (10,000 by default), "
                                       "which is also the default",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 10_000}},
                       {"name": "If-None-Match", "in": "header", "required": False,
                        "schema": {"type": "string"}}],
        "responses": {"200": json_body("QueueDraw"), "304": {"description": "Not modified"},
                      "400": problem("invalid_request"),
                      "404": problem("event_not_found", "draw_page_not_found"),
                      "429": problem("rate_limited")}}},
    "/api/ops/events/{event_id}/queue": {
        "get": {"summary": "Waiting-room settings, live figures and controller state (operator)",
                "security": _ADMIN, "parameters": [EVENT_ID],
                "responses": {"200": json_body("QueueOps"), **_OPS_ERRORS}},
        "patch": {"summary": "Change the waiting-room settings (operator); the policy is "
                             "frozen once the sale is open",
                  "description": "Rules between fields, each a 400 invalid_request: "
                                 "admission_rate_min <= admission_rate_max; prequeue_at "
                                 "not after the event's onsale_at; the risk thresholds "
                                 "that are set ascend (raised < high < refused).",
                  "security": _ADMIN, "parameters": [EVENT_ID],
                  "requestBody": request_body("QueueUpdate"),
                  "responses": {"200": json_body("QueueOps"),
                                "400": problem("invalid_request", "invalid_json"),
                                "409": problem("policy_frozen"), **_OPS_ERRORS}}},
    "/api/ops/events/{event_id}/queue/pause": {"post": {
        "summary": "Pause admission (queued visitors keep their places)",
        "security": _ADMIN, "parameters": [EVENT_ID],
        "responses": {"200": json_body("QueueOps"), **_OPS_ERRORS}}},
    "/api/ops/events/{event_id}/queue/resume": {"post": {
        "summary": "Resume admission", "security": _ADMIN, "parameters": [EVENT_ID],
        "responses": {"200": json_body("QueueOps"), **_OPS_ERRORS}}},
}

# Every body is a Struct (edge/request_bodies.py, edge/response_bodies.py, and the
# queue settings core's event creation shares): these are their components, generated.
EDGE_SCHEMAS: dict[str, Any] = components(
    [QueueJoin, QueueUpdate, FairnessScenario, DrawFallback, *RESPONSE_BODIES])

# The operator console's routes (edge/ops_dashboard.py).
EDGE_PATHS.update(OPS_PATHS)
EDGE_PATHS.update(ARRIVALS_PATHS)
EDGE_PATHS.update(DRAW_OPS_PATHS)

EDGE_API = ApiSpec("edge", EDGE_PATHS, EDGE_SCHEMAS)
