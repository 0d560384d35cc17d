"""The OpenAPI document for core's routes (a test checks it matches the router)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response


def _problem(*codes: str) -> dict[str, Any]:
    return {
        "description": "Problem details; code is one of: " + ", ".join(codes),
        "content": {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}},
        },
    }


def _json(schema_ref: str, description: str = "OK") -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema_ref}"}}},
    }


_IDEM = {"name": "Idempotency-Key", "in": "header", "required": True, "schema": {"type": "string"}}
_EVENT = {"name": "event_id", "in": "path", "required": True, "schema": {"type": "integer"}}
_HOLD = {"name": "hold_id", "in": "path", "required": True,
         "schema": {"type": "string", "format": "uuid"}}
_CREDS = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Credentials"}}}}
# The gate on sales routes (docs/edge.md): an Admission-Token header or the
# onsale_admission_{event_id} cookie.
_GATE = _problem("admission_required", "admission_invalid", "admission_expired",
                 "admission_wrong_event", "admission_wrong_account", "admission_revoked")

PATHS: dict[str, dict[str, Any]] = {
    "/api/accounts": {"post": {
        "summary": "Sign up", "requestBody": _CREDS,
        "responses": {"201": _json("Account", "Created; the session cookie is set"),
                      "400": _problem("invalid_email", "weak_password", "invalid_json"),
                      "409": _problem("email_taken"),
                      "429": _problem("rate_limited"),
                      "503": _problem("session_unavailable", "sign_in_busy")}}},
    "/api/session": {
        "post": {"summary": "Sign in (a new session id every time)", "requestBody": _CREDS,
                 "responses": {"200": _json("Account"), "401": _problem("bad_credentials"),
                               "429": _problem("rate_limited"),
                               "503": _problem("session_unavailable", "sign_in_busy")}},
        "delete": {"summary": "Sign out: revoke this session for every copy of the cookie",
                   "responses": {"204": {"description": "Signed out"},
                                 "503": _problem("session_unavailable")}}},
    "/api/sessions": {"delete": {
        "summary": "Sign out everywhere: revoke every session of the account",
        "responses": {"204": {"description": "Every session of the account revoked"},
                      "401": _problem("authentication_required"),
                      "503": _problem("session_unavailable")}}},
    "/api/me": {"get": {"summary": "The signed-in account",
                        "responses": {"200": _json("Account"),
                                      "401": _problem("authentication_required"),
                                      "503": _problem("session_unavailable")}}},
    "/api/events": {"get": {"summary": "List events",
                            "responses": {"200": _json("EventList")}}},
    "/api/events/{event_id}": {"get": {
        "summary": "One event", "parameters": [_EVENT],
        "responses": {"200": _json("Event"), "404": _problem("event_not_found")}}},
    "/api/events/{event_id}/venue": {"get": {
        "summary": "The static seat layout (strong ETag, cacheable for a year)",
        "parameters": [_EVENT],
        "responses": {"200": _json("Venue"), "304": {"description": "Not modified"},
                      "404": _problem("event_not_found")}}},
    "/api/events/{event_id}/holds": {"post": {
        "summary": "Hold 1-6 seats, all or nothing", "parameters": [_EVENT, _IDEM],
        "requestBody": {"content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/HoldRequest"}}}},
        "responses": {
            "201": _json("Hold", "Held (or the original response, replayed)"),
            "400": _problem("invalid_seats", "idempotency_key_required", "invalid_json"),
            "401": _problem("authentication_required"),
            "403": _GATE,
            "404": _problem("event_not_found"),
            "409": _problem("seats_unavailable", "ticket_limit_exceeded",
                            "idempotency_conflict", "sale_not_open"),
            "503": _problem("inventory_unavailable", "admission_unavailable")}}},
    "/api/holds/{hold_id}": {
        "get": {"summary": "One of your holds", "parameters": [_HOLD],
                "responses": {"200": _json("Hold"), "404": _problem("hold_not_found")}},
        "delete": {"summary": "Release one of your holds", "parameters": [_HOLD],
                   "responses": {"200": _json("Hold"), "404": _problem("hold_not_found"),
                                 "409": _problem("hold_not_releasable")}}},
    "/api/holds/{hold_id}/checkout": {"post": {
        "summary": "Pay for a hold: authorize, sell, capture (one order per hold)",
        "parameters": [_HOLD, _IDEM],
        "requestBody": {"content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/CheckoutRequest"}}}},
        "responses": {
            "201": _json("Order", "The order and its payment state; next_action when the "
                                  "shopper must authenticate (3-D Secure)"),
            "200": _json("Order", "A replay of the same key and body: the order's current state"),
            "400": _problem("invalid_payment_method", "idempotency_key_required",
                            "invalid_json", "invalid_request"),
            "413": _problem("invalid_request"),
            "401": _problem("authentication_required"),
            "403": _GATE,
            "404": _problem("hold_not_found"),
            "409": _problem("hold_expired", "hold_expiring", "hold_checked_out",
                            "checkout_in_progress", "price_changed", "ticket_limit_exceeded",
                            "idempotency_conflict"),
            "503": _problem("payments_unavailable", "inventory_unavailable",
                            "admission_unavailable")}}},
    "/api/orders/{order_id}": {"get": {
        "summary": "One of your orders: status, payment status, seats, amount, tickets",
        "parameters": [{"name": "order_id", "in": "path", "required": True,
                        "schema": {"type": "string", "format": "uuid"}}],
        "responses": {"200": _json("Order"), "401": _problem("authentication_required"),
                      "404": _problem("order_not_found")}}},
    "/api/webhooks/payments": {"post": {
        "summary": "Provider webhooks (Psp-Signature: t=...,v1=HMAC-SHA256)",
        "parameters": [{"name": "Psp-Signature", "in": "header", "required": True,
                        "schema": {"type": "string"}}],
        "responses": {"200": {"description": "Received (applied, ignored or a duplicate)"},
                      "400": _problem("invalid_signature", "invalid_webhook"),
                      "503": _problem("payments_unavailable", "inventory_unavailable")}}},
    "/api/ops/events": {"post": {
        "summary": "Create an event from a generated layout (operator)",
        "security": [{"admin": []}],
        "parameters": [{**_IDEM, "required": False,
                        "description": "Optional: a retried create returns the first event"}],
        "requestBody": {"content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/EventSpec"}}}},
        "responses": {"201": _json("Event"), "400": _problem("invalid_request"),
                      "401": _problem("admin_required"),
                      "409": _problem("idempotency_conflict")}}},
    "/metrics": {"get": {"summary": "Prometheus metrics",
                         "responses": {"200": {"description": "text/plain exposition"}}}},
    "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "alive"}}}},
    "/readyz": {"get": {"summary": "Readiness (database reachable)",
                        "responses": {"200": {"description": "ready"},
                                      "503": _problem("inventory_unavailable")}}},
    "/openapi.json": {"get": {"summary": "This document",
                              "responses": {"200": {"description": "OpenAPI 3.1"}}}},
}

_QUEUE_SETTINGS: dict[str, Any] = {
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
    "Problem": {"type": "object", "required": ["type", "title", "status", "code"], "properties": {
        "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
        "code": {"type": "string"}, "detail": {"type": "string"}}},
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
        "queue": {"type": "object", "description": "The published waiting-room policy",
                  "properties": {
                      "policy": {"type": "string", "enum": ["fifo", "random", "passthrough"]},
                      "prequeue_at": {"type": ["string", "null"], "format": "date-time"},
                      "pow_difficulty": {"type": "integer"},
                      "draw": {"type": ["object", "null"], "properties": {
                          "commitment": {"type": "string", "description": "sha256(seed), hex"},
                          "seed": {"type": ["string", "null"],
                                   "description": "Revealed by the draw"},
                          "drawn_at": {"type": ["string", "null"], "format": "date-time"}}}}}}},
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
        **_QUEUE_SETTINGS}},
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
                "section": {"type": "string"}, "together": {"type": "boolean"}}}}}]},
    "CheckoutRequest": {"type": "object", "required": ["payment_method"], "properties": {
        "payment_method": {"type": "string", "description":
                           "A card number (the simulator's test cards) or a payment method id"}}},
    "Order": {"type": "object", "properties": {
        "order_id": {"type": "string", "format": "uuid"},
        "hold_id": {"type": "string", "format": "uuid"}, "event_id": {"type": "integer"},
        "order_status": {"type": "string",
                         "enum": ["PENDING", "CONFIRMED", "CANCELLED", "FAILED"]},
        "payment_status": {"type": "string", "enum": [
            "PENDING", "REQUIRES_ACTION", "AUTHORIZED", "CAPTURED", "DECLINED", "UNKNOWN",
            "VOIDED", "CAPTURE_FAILED", "FAILED"]},
        "next_action": {"type": ["object", "null"]},
        "amount_minor": {"type": "integer"}, "currency": {"type": "string"},
        "seats": {"type": "array", "items": _SEAT},
        "tickets": {"type": "array", "items": {"type": "object", "properties": {
            "ticket_id": {"type": "string"}, "seat_id": {"type": "integer"},
            "code": {"type": "string"}}}},
        "cancel_reason": {"type": ["string", "null"]},
        "hold_expires_at": {"type": "string", "format": "date-time"},
        "payment_deadline": {"type": ["string", "null"], "format": "date-time"},
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"}}},
    "Hold": {"type": "object", "properties": {
        "hold_id": {"type": "string", "format": "uuid"}, "event_id": {"type": "integer"},
        "status": {"type": "string",
                   "enum": ["HELD", "PAYMENT_PENDING", "CONFIRMED", "RELEASED", "EXPIRED"]},
        "expires_at": {"type": "string", "format": "date-time"},
        "seats": {"type": "array", "items": _SEAT},
        "amount_minor": {"type": "integer"}, "currency": {"type": "string"}}},
}


_UNSAFE = ("post", "put", "patch", "delete")
_RAW_BODY = ("/api/webhooks/payments",)  # signed bytes, not json_object: no 415


def _with_refusals(paths: dict[str, Any]) -> dict[str, Any]:
    """Every unsafe operation can be ``403 cross_site_request`` (core.security), and
    every one that reads a JSON body ``415 unsupported_media_type`` (core.inputs)."""
    out: dict[str, Any] = {}
    for path, item in paths.items():
        out[path] = dict(item)
        for method, op in item.items():
            if method not in _UNSAFE:
                continue
            responses = dict(op["responses"])
            extra = [("403", "cross_site_request")]
            if "requestBody" in op and path not in _RAW_BODY:
                extra.append(("415", "unsupported_media_type"))
            for status, code in extra:
                found = responses.get(status)
                if found is None or "application/problem+json" not in found.get("content", {}):
                    responses[status] = _problem(code)
                else:
                    responses[status] = {**found,
                                         "description": f"{found['description']}, {code}"}
            out[path][method] = {**op, "responses": responses}
    return out


def document(parts: tuple[str, ...] = ("core",)) -> dict[str, Any]:
    """The document of what an app serves: core, the edge, the seat map, or all (dev)."""
    from onsale.edge.openapi import EDGE_PATHS, EDGE_SCHEMAS

    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {"Problem": SCHEMAS["Problem"]}
    if "core" in parts:
        paths.update(PATHS)
        schemas.update(SCHEMAS)
    if "edge" in parts:
        paths.update(EDGE_PATHS)
        schemas.update(EDGE_SCHEMAS)
    if "seatmap" in parts:
        from onsale.seatmap.openapi import SEATMAP_PATHS, SEATMAP_SCHEMAS

        paths.update(SEATMAP_PATHS)
        schemas.update(SEATMAP_SCHEMAS)
    return {
        "openapi": "3.1.0",
        "info": {"title": "onsale API (" + " + ".join(parts) + ")", "version": "0.1.0"},
        "paths": _with_refusals(paths),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"admin": {"type": "http", "scheme": "bearer"}},
        },
    }


async def openapi_endpoint(request: Request) -> Response:
    app = request.scope.get("app")
    parts = getattr(app.state, "openapi_parts", ("core",)) if app is not None else ("core",)
    return JSONResponse(document(parts))
