"""The OpenAPI paths and schemas of core's routes; the composition root merges them
into the document of every app that serves them (a test checks it matches the router)."""

from __future__ import annotations

from typing import Any

from onsale.core.request_bodies import HOLD_REQUEST_EXTRA, REQUEST_BODIES
from onsale.core.response_bodies import RESPONSE_BODIES
from onsale.kernel.bodies import components
from onsale.kernel.openapi import EVENT_ID, ApiSpec, json_body, problem, request_body

_IDEM = {"name": "Idempotency-Key", "in": "header", "required": True, "schema": {"type": "string"}}
_HOLD = {"name": "hold_id", "in": "path", "required": True,
         "schema": {"type": "string", "format": "uuid"}}
# The layout's content hash (links.venue of the event document): its strong ETag.
_LAYOUT_HASH = {"name": "layout_hash", "in": "path", "required": True,
                "schema": {"type": "string", "pattern": "^[0-9a-f]{32}$"}}
_TIER_ID = {"name": "tier_id", "in": "path", "required": True, "schema": {"type": "integer"}}
_CREDS = request_body("Credentials")
# The gate on sales routes (docs/edge.md): an Admission-Token header or the
# onsale_admission_{event_id} cookie.
_GATE = problem("admission_required", "admission_invalid", "admission_expired",
                 "admission_wrong_event", "admission_wrong_account", "admission_revoked")

PATHS: dict[str, dict[str, Any]] = {
    "/api/accounts": {"post": {
        "summary": "Sign up", "requestBody": _CREDS,
        "responses": {"201": json_body("Account", "Created; the session cookie is set"),
                      "400": problem("invalid_email", "weak_password", "invalid_json"),
                      "409": problem("email_taken"),
                      "429": problem("rate_limited"),
                      "503": problem("session_unavailable", "sign_in_busy")}}},
    "/api/session": {
        "post": {"summary": "Sign in (a new session id every time)",
                 "requestBody": request_body("SignIn"),
                 "responses": {"200": json_body("Account"), "400": problem("invalid_json"),
                               "401": problem("bad_credentials"),
                               "429": problem("rate_limited"),
                               "503": problem("session_unavailable", "sign_in_busy")}},
        "delete": {"summary": "Sign out: revoke this session for every copy of the cookie",
                   "responses": {"204": {"description": "Signed out"},
                                 "503": problem("session_unavailable")}}},
    "/api/sessions": {"delete": {
        "summary": "Sign out everywhere: revoke every session of the account",
        "responses": {"204": {"description": "Every session of the account revoked"},
                      "401": problem("authentication_required"),
                      "503": problem("session_unavailable")}}},
    "/api/me": {"get": {"summary": "The signed-in account",
                        "responses": {"200": json_body("Account"),
                                      "401": problem("authentication_required"),
                                      "503": problem("session_unavailable")}}},
    "/api/events": {"get": {"summary": "List events",
                            "responses": {"200": json_body("EventList")}}},
    "/api/events/{event_id}": {"get": {
        "summary": "One event", "parameters": [EVENT_ID],
        "responses": {"200": json_body("Event"), "404": problem("event_not_found")}}},
    "/api/events/{event_id}/venue": {"get": {
        "summary": "The static seat layout (strong ETag, cacheable for a year)",
        "description": "The same bytes and validators as the content-addressed URL the "
                       "event document links to (links.venue); kept for older clients.",
        "parameters": [EVENT_ID],
        "responses": {"200": json_body("Venue"), "304": {"description": "Not modified"},
                      "404": problem("event_not_found"),
                      "503": problem("inventory_unavailable")}}},
    "/api/events/{event_id}/venue/{layout_hash}": {"get": {
        "summary": "The seat layout at its immutable, content-addressed URL "
                   "(cacheable forever by browsers and CDNs)",
        "parameters": [EVENT_ID, _LAYOUT_HASH],
        "responses": {"200": json_body("Venue"), "304": {"description": "Not modified"},
                      "404": problem("venue_not_found"),
                      "503": problem("inventory_unavailable")}}},
    "/api/events/{event_id}/holds": {"post": {
        "summary": "Hold 1-6 seats, or places of a GA tier, all or nothing",
        "parameters": [EVENT_ID, _IDEM],
        "requestBody": request_body("HoldRequest"),
        "responses": {
            "201": json_body("Hold", "Held (or the original response, replayed)"),
            "400": problem("invalid_seats", "invalid_quantity", "idempotency_key_required",
                           "invalid_json"),
            "401": problem("authentication_required"),
            "403": _GATE,
            "404": problem("event_not_found", "ga_tier_not_found"),
            "409": problem("seats_unavailable", "sold_out", "insufficient_quantity",
                           "ticket_limit_exceeded", "idempotency_conflict", "sale_not_open"),
            "503": problem("inventory_unavailable", "admission_unavailable")}}},
    "/api/holds/{hold_id}": {
        "get": {"summary": "One of your holds", "parameters": [_HOLD],
                "responses": {"200": json_body("Hold"),
                              "401": problem("authentication_required"),
                              "404": problem("hold_not_found")}},
        "delete": {"summary": "Release one of your holds", "parameters": [_HOLD],
                   "responses": {"200": json_body("Hold"),
                                 "401": problem("authentication_required"),
                                 "404": problem("hold_not_found"),
                                 "409": problem("hold_not_releasable")}}},
    "/api/holds/{hold_id}/checkout": {"post": {
        "summary": "Pay for a hold: authorize, sell, capture (one order per hold)",
        "parameters": [_HOLD, _IDEM],
        "requestBody": request_body("CheckoutRequest"),
        "responses": {
            "201": json_body("Order", "The order and its payment state; next_action when the "
                                  "shopper must authenticate (3-D Secure)"),
            "200": json_body("Order",
                             "A replay of the same key and body: the order's current state"),
            "400": problem("invalid_payment_method", "idempotency_key_required",
                            "invalid_json", "invalid_request"),
            "413": problem("invalid_request"),
            "401": problem("authentication_required"),
            "403": _GATE,
            "404": problem("hold_not_found"),
            "409": problem("hold_expired", "hold_expiring", "hold_checked_out",
                            "checkout_in_progress", "price_changed", "ticket_limit_exceeded",
                            "idempotency_conflict"),
            "503": problem("payments_unavailable", "inventory_unavailable",
                            "admission_unavailable")}}},
    "/api/orders": {"get": {
        "summary": "Your orders, newest first, a page at a time: state, event, seats or "
                   "GA places, amount",
        "description": "Orders from every shard merged by creation time. `next` links the "
                       "following page (keyset: `before` is the last order shown). An order "
                       "still `in_progress` is worth reading again in a few seconds. "
                       "`complete` is false while a database does not answer. "
                       "`Cache-Control: no-store`.",
        "parameters": [
            {"name": "limit", "in": "query", "required": False,
             "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
            {"name": "before", "in": "query", "required": False,
             "description": "A previous page's next_cursor",
             "schema": {"type": "string", "pattern": r"^[0-9]{1,17}\.[0-9a-f]{8}-[0-9a-f]{4}-"
                                                     r"[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}}],
        "responses": {"200": json_body("OrderList"), "400": problem("invalid_request"),
                      "401": problem("authentication_required"),
                      "503": problem("inventory_unavailable")}}},
    "/api/orders/{order_id}": {"get": {
        "summary": "One of your orders: status, payment status, seats, amount, tickets",
        "parameters": [{"name": "order_id", "in": "path", "required": True,
                        "schema": {"type": "string", "format": "uuid"}}],
        "responses": {"200": json_body("Order"), "401": problem("authentication_required"),
                      "404": problem("order_not_found")}}},
    "/api/events/{event_id}/ticket-keys": {"get": {
        "summary": "The public keys that verify this event's tickets (cacheable)",
        "description": "Every configured key (JWK fields kty, crv, x), each valid for this "
                       "event's tickets until the event ends (docs/tickets.md).",
        "parameters": [EVENT_ID],
        "responses": {"200": json_body("TicketKeys"), "404": problem("event_not_found"),
                      "503": problem("inventory_unavailable")}}},
    "/api/events/{event_id}/ticket-revocations": {"get": {
        "summary": "The tickets of this event a gate must refuse: refunded or cancelled "
                   "orders (ETag, cacheable)",
        "parameters": [EVENT_ID, {
            "name": "since", "in": "query", "required": False,
            "description": "Only orders changed after this instant (a previous as_of)",
            "schema": {"type": "string", "format": "date-time"}}],
        "responses": {"200": json_body("TicketRevocations"),
                      "304": {"description": "Not modified"},
                      "400": problem("invalid_request"), "404": problem("event_not_found"),
                      "503": problem("inventory_unavailable")}}},
    "/api/webhooks/payments": {"post": {
        "summary": "Provider webhooks (Psp-Signature: t=...,v1=HMAC-SHA256)",
        "parameters": [{"name": "Psp-Signature", "in": "header", "required": True,
                        "schema": {"type": "string"}}],
        "responses": {"200": {"description": "Received (applied, ignored or a duplicate)"},
                      "400": problem("invalid_signature", "invalid_webhook"),
                      "503": problem("payments_unavailable", "inventory_unavailable")}}},
    "/api/ops/events": {"post": {
        "summary": "Create an event from a generated layout (operator)",
        "description": "Rules between fields, each a 400 invalid_request naming the field: "
                       "admission_rate_min <= admission_rate_max; prequeue_at not after "
                       "onsale_at; seats 0 only with ga_tiers; GA tier names distinct.",
        "security": [{"admin": []}],
        "parameters": [{**_IDEM, "required": False,
                        "description": "Optional: a retried create returns the first event"}],
        "requestBody": request_body("NewEvent"),
        "responses": {"201": json_body("OperatorEvent"),
                      "400": problem("invalid_request", "invalid_json"),
                      "401": problem("admin_required"),
                      "409": problem("idempotency_conflict", "shard_not_active"),
                      "422": problem("shard_not_found"),
                      "503": problem("inventory_unavailable")}}},
    "/api/ops/events/{event_id}/move": {"post": {
        "summary": "Move an event to another shard before its queue opens (operator)",
        "description": "Copy, verify, switch the placement, delete the old copy "
                       "(docs/scaling.md#moving-an-event).",
        "security": [{"admin": []}], "parameters": [EVENT_ID],
        "requestBody": request_body("MoveRequest"),
        "responses": {"200": json_body("OperatorEvent", "Moved, or on that shard already"),
                      "400": problem("invalid_request", "invalid_json"),
                      "401": problem("admin_required"),
                      "404": problem("event_not_found"),
                      "409": problem("event_already_open", "shard_not_active",
                                     "move_not_verified"),
                      "422": problem("shard_not_found"),
                      "503": problem("inventory_unavailable")}}},
    "/api/ops/events/{event_id}/ga": {"get": {
        "summary": "An event's GA tiers with every stripe's counts and recent rebalances"
                   " (operator)",
        "security": [{"admin": []}], "parameters": [EVENT_ID],
        "responses": {"200": json_body("GAReport"), "401": problem("admin_required"),
                      "404": problem("event_not_found")}}},
    "/api/ops/events/{event_id}/ga/{tier_id}/rebalance": {"post": {
        "summary": "Spread a GA tier's available places evenly over its stripes now"
                   " (operator)",
        "security": [{"admin": []}], "parameters": [EVENT_ID, _TIER_ID],
        "responses": {"200": json_body("GARebalance"), "401": problem("admin_required"),
                      "404": problem("ga_tier_not_found")}}},
    "/api/ops/events/{event_id}/ga/{tier_id}": {"get": {
        "summary": "One GA tier with every stripe's counts (operator)",
        "security": [{"admin": []}], "parameters": [EVENT_ID, _TIER_ID],
        "responses": {"200": json_body("GATier"), "401": problem("admin_required"),
                      "404": problem("ga_tier_not_found")}}, "patch": {
        "summary": "Give a GA tier N active stripes, on sale or not (operator)",
        "security": [{"admin": []}], "parameters": [EVENT_ID, _TIER_ID],
        "requestBody": request_body("StripesRequest"),
        "responses": {"200": json_body("GARebalance"),
                      "400": problem("invalid_request", "invalid_json"),
                      "401": problem("admin_required"),
                      "404": problem("ga_tier_not_found")}}},
    "/metrics": {"get": {"summary": "Prometheus metrics",
                         "responses": {"200": {"description": "text/plain exposition"}}}},
    "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "alive"}}}},
    "/readyz": {"get": {"summary": "Readiness: each dependency (the directory's database, "
                                   "each other shard, Valkey, the provider) asked now",
                        "responses": {"200": {"description": "ready, or degraded: a "
                                                             "dependency it can serve without "
                                                             "does not answer"},
                                      "503": problem("inventory_unavailable")}}},
    "/openapi.json": {"get": {"summary": "This document",
                              "responses": {"200": {"description": "OpenAPI 3.1"}}}},
}

# Every body, request and answer, is a Struct (core/request_bodies.py,
# core/response_bodies.py): these are their components, generated.
SCHEMAS: dict[str, Any] = components(
    [*REQUEST_BODIES, *RESPONSE_BODIES], extra={"HoldRequest": HOLD_REQUEST_EXTRA})

# The webhook reads signed bytes, not a JSON object: never 415.
RAW_BODY_PATHS = ("/api/webhooks/payments",)

CORE_API = ApiSpec("core", PATHS, SCHEMAS, raw_body_paths=RAW_BODY_PATHS)
