"""The OpenAPI paths and schemas of core's routes; the composition root merges them
into the document of every app that serves them (a test checks it matches the router)."""

from __future__ import annotations

from typing import Any

from onsale.core.hold_state import HoldState
from onsale.core.order_state import OrderState
from onsale.core.payment_state import PaymentStatus
from onsale.kernel.openapi import EVENT_ID, ApiSpec, json_body, problem

_IDEM = {"name": "Idempotency-Key", "in": "header", "required": True, "schema": {"type": "string"}}
_HOLD = {"name": "hold_id", "in": "path", "required": True,
         "schema": {"type": "string", "format": "uuid"}}
# The layout's content hash (links.venue of the event document): its strong ETag.
_LAYOUT_HASH = {"name": "layout_hash", "in": "path", "required": True,
                "schema": {"type": "string", "pattern": "^[0-9a-f]{32}$"}}
_TIER_ID = {"name": "tier_id", "in": "path", "required": True, "schema": {"type": "integer"}}
_CREDS = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Credentials"}}}}
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
        "post": {"summary": "Sign in (a new session id every time)", "requestBody": _CREDS,
                 "responses": {"200": json_body("Account"), "401": problem("bad_credentials"),
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
        "requestBody": {"content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/HoldRequest"}}}},
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
                "responses": {"200": json_body("Hold"), "404": problem("hold_not_found")}},
        "delete": {"summary": "Release one of your holds", "parameters": [_HOLD],
                   "responses": {"200": json_body("Hold"), "404": problem("hold_not_found"),
                                 "409": problem("hold_not_releasable")}}},
    "/api/holds/{hold_id}/checkout": {"post": {
        "summary": "Pay for a hold: authorize, sell, capture (one order per hold)",
        "parameters": [_HOLD, _IDEM],
        "requestBody": {"content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/CheckoutRequest"}}}},
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
    "/api/orders/{order_id}": {"get": {
        "summary": "One of your orders: status, payment status, seats, amount, tickets",
        "parameters": [{"name": "order_id", "in": "path", "required": True,
                        "schema": {"type": "string", "format": "uuid"}}],
        "responses": {"200": json_body("Order"), "401": problem("authentication_required"),
                      "404": problem("order_not_found")}}},
    "/api/webhooks/payments": {"post": {
        "summary": "Provider webhooks (Psp-Signature: t=...,v1=HMAC-SHA256)",
        "parameters": [{"name": "Psp-Signature", "in": "header", "required": True,
                        "schema": {"type": "string"}}],
        "responses": {"200": {"description": "Received (applied, ignored or a duplicate)"},
                      "400": problem("invalid_signature", "invalid_webhook"),
                      "503": problem("payments_unavailable", "inventory_unavailable")}}},
    "/api/ops/events": {"post": {
        "summary": "Create an event from a generated layout (operator)",
        "security": [{"admin": []}],
        "parameters": [{**_IDEM, "required": False,
                        "description": "Optional: a retried create returns the first event"}],
        "requestBody": {"content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/EventSpec"}}}},
        "responses": {"201": json_body("OperatorEvent"), "400": problem("invalid_request"),
                      "401": problem("admin_required"),
                      "409": problem("idempotency_conflict", "shard_not_active"),
                      "422": problem("shard_not_found")}}},
    "/api/ops/events/{event_id}/move": {"post": {
        "summary": "Move an event to another shard before its queue opens (operator)",
        "description": "Copy, verify, switch the placement, delete the old copy "
                       "(docs/scaling.md#moving-an-event).",
        "security": [{"admin": []}], "parameters": [EVENT_ID],
        "requestBody": {"content": {"application/json": {"schema": {
            "type": "object", "required": ["shard"], "properties": {
                "shard": {"type": "integer", "minimum": 1, "maximum": 32767}}}}}},
        "responses": {"200": json_body("OperatorEvent", "Moved, or on that shard already"),
                      "400": problem("invalid_request"), "401": problem("admin_required"),
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
        "requestBody": {"content": {"application/json": {"schema": {
            "type": "object", "required": ["stripes"], "properties": {
                "stripes": {"type": "integer", "minimum": 1, "maximum": 64}}}}}},
        "responses": {"200": json_body("GARebalance"), "400": problem("invalid_request"),
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

_GA_LINE = {"type": "object", "description": "A GA hold's line (absent for seats)",
            "properties": {"tier_id": {"type": "integer"}, "name": {"type": "string"},
                           "quantity": {"type": "integer"},
                           "price_minor": {"type": "integer", "description": "Per place"}}}
_GA_TIER_PROPS: dict[str, Any] = {
    "tier_id": {"type": "integer"}, "name": {"type": "string"},
    "price_minor": {"type": "integer"}, "capacity": {"type": "integer"},
    "max_per_hold": {"type": "integer"}, "max_per_account": {"type": ["integer", "null"]},
    "available": {"type": "integer", "description": "Places left now (all stripes)"}}
_GA_TIER = {"type": "object", "properties": _GA_TIER_PROPS}
_GA_OPS_TIER = {"type": "object", "properties": {
    **_GA_TIER_PROPS, "stripes": {"type": "integer"},
    "held": {"type": "integer"}, "sold": {"type": "integer"},
    "stripe_counts": {"type": "array", "items": {"type": "object", "properties": {
        "stripe": {"type": "integer"}, "active": {"type": "boolean"},
        "available": {"type": "integer"}, "held": {"type": "integer"},
        "sold": {"type": "integer"}, "version": {"type": "integer"}}}},
    "recent_rebalances": {"type": "array", "items": {"type": "object"}}}}

QUEUE_SETTINGS: dict[str, Any] = {
    "queue_policy": {"type": "string", "enum": ["fifo", "random", "passthrough"]},
    "prequeue_at": {"type": "string", "format": "date-time"},
    "admission_rate_min": {"type": "integer", "description": "New shoppers per minute"},
    "admission_rate_max": {"type": "integer"}, "active_cap": {"type": "integer"},
    "pow_difficulty": {"type": "integer", "minimum": 0, "maximum": 32}}

_SEAT = {"type": "object", "properties": {
    "seat_id": {"type": "integer"}, "section": {"type": "string"}, "row": {"type": "string"},
    "number": {"type": "integer"}, "tier": {"type": "string"},
    "price_minor": {"type": "integer"}}}

SCHEMAS: dict[str, Any] = {
    "Credentials": {"type": "object", "required": ["email", "password"], "properties": {
        "email": {"type": "string", "format": "email"},
        "password": {"type": "string", "minLength": 8}}},
    "Account": {"type": "object", "properties": {
        "account_id": {"type": "string", "format": "uuid"}, "email": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"}}},
    "Event": {"type": "object", "properties": {
        "event_id": {"type": "integer"}, "name": {"type": "string"},
        "venue_name": {"type": "string"}, "starts_at": {"type": "string", "format": "date-time"},
        "onsale_at": {"type": "string", "format": "date-time"}, "currency": {"type": "string"},
        "seat_count": {"type": "integer"}, "hold_ttl_seconds": {"type": "integer"},
        "max_tickets_per_account": {"type": "integer"}, "max_seats_per_hold": {"type": "integer"},
        "price_tiers": {"type": "array", "items": {"type": "object"}},
        "ga_tiers": {"type": "array", "items": _GA_TIER},
        "queue": {"type": "object", "description": "The published waiting-room policy",
                  "properties": {
                      "policy": {"type": "string", "enum": ["fifo", "random", "passthrough"]},
                      "prequeue_at": {"type": ["string", "null"], "format": "date-time"},
                      "pow_difficulty": {"type": "integer"},
                      "draw": {"type": ["object", "null"], "properties": {
                          "commitment": {"type": "string", "description": "sha256(seed), hex"},
                          "seed": {"type": ["string", "null"],
                                   "description": "Revealed by the draw"},
                          "drawn_at": {"type": ["string", "null"], "format": "date-time"}}}}},
        "links": {"type": "object", "properties": {
            "venue": {"type": "string", "description": "The layout's immutable, "
                      "content-addressed URL: /api/events/{event_id}/venue/{layout_hash}"},
            "holds": {"type": "string"}, "queue": {"type": "string"}}}}},
    "OperatorEvent": {"allOf": [{"$ref": "#/components/schemas/Event"}, {
        "type": "object", "properties": {
            "shard": {"type": "integer", "description": "The shard the event lives on"},
            "moved_from": {"type": "integer", "description": "A move's answer: the shard "
                           "it left (the same as shard: it was there already)"},
            "rows_copied": {"type": "object", "description": "A move's answer: the rows "
                            "copied, per table", "additionalProperties": {"type": "integer"}}}}]},
    "EventList": {"type": "object", "properties": {
        "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}}}},
    "EventSpec": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "seats": {"type": "integer"},
        "hold_ttl_seconds": {"type": "integer"}, "max_tickets_per_account": {"type": "integer"},
        "max_seats_per_hold": {"type": "integer"},
        "onsale_at": {"type": "string", "format": "date-time"},
        "starts_at": {"type": "string", "format": "date-time"},
        "venue_name": {"type": "string"}, "currency": {"type": "string"},
        "price_tiers": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "price_minor": {"type": "integer"}}}},
        "ga_tiers": {"type": "array", "description": "General-admission tiers (seats may "
                     "then be 0)", "items": {"type": "object",
                     "required": ["name", "price_minor", "capacity"], "properties": {
                         "name": {"type": "string"}, "price_minor": {"type": "integer"},
                         "capacity": {"type": "integer"},
                         "stripes": {"type": "integer", "minimum": 1, "maximum": 64},
                         "max_per_hold": {"type": "integer"},
                         "max_per_account": {"type": "integer"}}}},
        "shard": {"type": "integer", "minimum": 1, "maximum": 32767,
                  "description": "The shard to place it on (default: the active shard "
                                 "with the fewest events on sale)"},
        **QUEUE_SETTINGS}},
    "Venue": {"type": "object", "properties": {
        "event_id": {"type": "integer"}, "seat_count": {"type": "integer"},
        "tiers": {"type": "array"}, "columns": {"type": "array"},
        "seats": {"type": "object", "description": "Columnar arrays keyed by column name"}}},
    "HoldRequest": {"oneOf": [
        {"type": "object", "required": ["seat_ids"], "properties": {
            "seat_ids": {"type": "array", "items": {"type": "integer"},
                         "minItems": 1, "uniqueItems": True,
                         "description": "At most the event's max_seats_per_hold (default 6)"}}},
        {"type": "object", "required": ["best_available"], "properties": {
            "best_available": {"type": "object", "required": ["quantity"], "properties": {
                "quantity": {"type": "integer", "minimum": 1,
                             "description": "At most the event's max_seats_per_hold"},
                "section": {"type": "string"}, "together": {"type": "boolean"}}}}},
        {"type": "object", "required": ["ga"], "properties": {
            "ga": {"type": "object", "required": ["tier_id", "quantity"], "properties": {
                "tier_id": {"type": "integer"},
                "quantity": {"type": "integer", "minimum": 1,
                             "description": "At most the tier's max_per_hold"}}}}}]},
    "CheckoutRequest": {"type": "object", "required": ["payment_method"], "properties": {
        "payment_method": {"type": "string", "description":
                           "A card number (the simulator's test cards) or a payment method id"}}},
    "Order": {"type": "object", "properties": {
        "order_id": {"type": "string", "format": "uuid"},
        "hold_id": {"type": "string", "format": "uuid"}, "event_id": {"type": "integer"},
        "order_status": {"type": "string", "enum": [s.value for s in OrderState]},
        "payment_status": {"type": "string", "enum": [s.value for s in PaymentStatus]},
        "next_action": {"type": ["object", "null"]},
        "amount_minor": {"type": "integer"}, "currency": {"type": "string"},
        "seats": {"type": "array", "items": _SEAT},
        "ga": _GA_LINE,
        "tickets": {"type": "array", "items": {"type": "object", "properties": {
            "ticket_id": {"type": "string"}, "seat_id": {"type": "integer"},
            "ga_tier_id": {"type": "integer"}, "place": {"type": "integer"},
            "code": {"type": "string"}}}},
        "cancel_reason": {"type": ["string", "null"]},
        "hold_expires_at": {"type": "string", "format": "date-time"},
        "payment_deadline": {"type": ["string", "null"], "format": "date-time"},
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"}}},
    "Hold": {"type": "object", "properties": {
        "hold_id": {"type": "string", "format": "uuid"}, "event_id": {"type": "integer"},
        "status": {"type": "string", "enum": [s.value for s in HoldState]},
        "expires_at": {"type": "string", "format": "date-time"},
        "seats": {"type": "array", "items": _SEAT},
        "ga": _GA_LINE,
        "amount_minor": {"type": "integer"}, "currency": {"type": "string"}}},
    "GAReport": {"type": "object", "properties": {
        "event_id": {"type": "integer"}, "at": {"type": "string", "format": "date-time"},
        "ga_tiers": {"type": "array", "items": _GA_OPS_TIER}}},
    "GATier": _GA_OPS_TIER,
    "GARebalance": {"type": "object", "properties": {
        "moved": {"type": "integer"}, "tier": _GA_OPS_TIER}},
}

# The webhook reads signed bytes, not a JSON object: never 415.
RAW_BODY_PATHS = ("/api/webhooks/payments",)

CORE_API = ApiSpec("core", PATHS, SCHEMAS, raw_body_paths=RAW_BODY_PATHS)
