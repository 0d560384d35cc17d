"""Operator routes behind the console (docs/console.md), Bearer ONSALE_ADMIN_TOKEN:

- ``GET /api/ops/events/{id}/dashboard``: the queue's settings, live figures
  and controller (``edge.ops.queue_doc``), core health as the controller sees
  it, the event's open payments, and the seat map's change-capture lag. Cached
  per process for ``DASHBOARD_TTL`` seconds: every open console shares one read.
- ``GET /api/ops/audit``: the invariant checks of ``onsale audit``
  (core/audit.py), run at most once per ``AUDIT_TTL`` seconds per process
  (``?fresh=1``: once per ``AUDIT_MIN_INTERVAL``); concurrent callers wait for
  the same run.
- ``POST /api/ops/fairness``: the fairness lab (edge/fairness.py) with an
  event's settings as defaults; one simulation at a time per process, in a
  thread, so the event loop keeps serving.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any

import msgspec
from msgspec import UNSET
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.core.audit import run_audit
from onsale.core.health import HEALTH_KEY
from onsale.edge.fairness import FairnessInputError, compare, parse_scenario
from onsale.edge.health import FRESH_SECONDS, fold
from onsale.edge.ops import queue_doc
from onsale.edge.queries import queries
from onsale.edge.request_bodies import FAIRNESS_CODES, FairnessScenario
from onsale.edge.runtime import Edge, edge_state
from onsale.kernel.auth import require_admin
from onsale.kernel.bodies import read_body
from onsale.kernel.dependency import describe
from onsale.kernel.inputs import int_path
from onsale.kernel.openapi import EVENT_ID, json_body, problem, request_body
from onsale.kernel.problems import Problem
from onsale.kernel.timefmt import utc_iso

DASHBOARD_TTL = 1.0
AUDIT_TTL = 30.0
AUDIT_MIN_INTERVAL = 10.0
AUDIT_SAMPLE_ROWS = 5


# -- the dashboard ---------------------------------------------------------------

async def health_doc(edge: Edge, active: int, cap: int,
                     shard: int | None = None) -> dict[str, Any]:
    now = time.time()
    try:
        raw = await edge.redis.hgetall(HEALTH_KEY)
    except Exception as exc:
        return {"redis_ok": False, "error": describe(exc)}
    reports = []
    for value in raw.values():
        try:
            reports.append(json.loads(value))
        except ValueError:
            continue
    h = fold(reports, now, active=active, cap=cap, shard=shard)
    return {
        "redis_ok": True, "core_ok": h.core_ok,
        "fresh_reports": sum(1 for r in reports if now - float(r.get("t", 0)) <= FRESH_SECONDS),
        "hold_p99_ms": h.hold_p99_ms, "lock_wait_p99_ms": h.lock_wait_p99_ms,
        "conflict_rate": h.conflict_rate, "payment_error_rate": h.payment_error_rate,
        "completion_rate": h.completion_rate,
    }


async def payments_doc(edge: Edge, event_id: int) -> dict[str, Any]:
    try:
        db = edge.db if edge.shards is None else await edge.shards.for_event(event_id)
        async with db.connection() as conn:
            row = await conn.fetchrow(queries("ops")["open_payments"], event_id)
    except Problem:
        return {"available": False}
    return {"available": True, "unknown": row["unknown"], "pending": row["pending"],
            "requires_action": row["requires_action"],
            "oldest_unknown_seconds": round(row["oldest_unknown_seconds"], 1)}


async def cdc_doc(edge: Edge) -> dict[str, Any]:
    """The seat map's change capture, as the root lets the edge read it."""
    if edge.capture_status is None:
        return {"available": False}
    return dict(await edge.capture_status())


async def dashboard_doc(edge: Edge, event_id: int) -> dict[str, Any]:
    queue = await queue_doc(edge, event_id)
    live, settings = queue["live"], queue["settings"]
    shard = None if edge.shards is None else edge.shards.placement.shard_of_event(event_id)
    health, payments, cdc = await asyncio.gather(
        health_doc(edge, int(live["active"]) + int(live["admitted_not_arrived"]),
                   int(settings["active_cap"]), shard),
        payments_doc(edge, event_id), cdc_doc(edge))
    return {"event_id": event_id, "shard": shard, "at": utc_iso(datetime.now(UTC)),
            "queue": queue,
            "health": health, "payments": payments, "cdc": cdc}


async def dashboard(request: Request) -> Response:
    require_admin(request)
    event_id = int_path(request, "event_id", "event_not_found")
    edge = edge_state(request)
    doc = await edge_state(request).ops.cache.get(("dashboard", event_id), DASHBOARD_TTL,
                                          lambda: dashboard_doc(edge, event_id))
    return JSONResponse(doc, headers={"Cache-Control": "no-store"})


# -- the audit -------------------------------------------------------------------

def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


async def audit_doc(edge: Edge) -> dict[str, Any]:
    """Every check on every shard; a check's sample rows name their shard."""
    started = time.monotonic()
    pools = {1: edge.db} if edge.shards is None else dict(edge.shards.pools)
    found: dict[str, list[dict[str, Any]]] = {}
    for shard_id in sorted(pools):
        async with pools[shard_id].connection() as conn:
            for name, rows in (await run_audit(conn)).items():
                found.setdefault(name, []).extend({"shard": shard_id, **r} for r in rows)
    checks = [{"name": name, "ok": not rows, "violations": len(rows),
               "sample": _plain(rows[:AUDIT_SAMPLE_ROWS])} for name, rows in found.items()]
    total = sum(c["violations"] for c in checks)
    return {"ok": total == 0, "violations": total, "checks": checks,
            "checked_at": utc_iso(datetime.now(UTC)),
            "duration_ms": round((time.monotonic() - started) * 1000, 1)}


async def audit(request: Request) -> Response:
    require_admin(request)
    edge = edge_state(request)
    cache = edge_state(request).ops.cache
    fresh = request.query_params.getlist("fresh")
    if fresh not in ([], ["1"], ["true"]):
        raise Problem(400, "invalid_request", detail="fresh is 1 or true, at most once.")
    ttl = AUDIT_MIN_INTERVAL if fresh else AUDIT_TTL
    doc = dict(await cache.get("audit", ttl, lambda: audit_doc(edge)))
    doc["age_seconds"] = round(cache.age("audit") or 0.0, 1)
    doc["cached_for_seconds"] = AUDIT_TTL
    return JSONResponse(doc, headers={"Cache-Control": "no-store"})


# -- the fairness lab ------------------------------------------------------------

async def event_defaults(edge: Edge, event_id: Any) -> dict[str, Any]:
    if isinstance(event_id, bool) or not isinstance(event_id, int):
        raise Problem(400, "invalid_request", detail="event_id must be an event's number",
                      field="event_id")
    if not 0 < event_id < 2**63:  # no such event (and PostgreSQL's bigint would refuse it)
        raise Problem(404, "event_not_found")
    async with edge.db.connection() as conn:
        row = await conn.fetchrow(queries("ops")["event_settings"], event_id)
    if row is None:
        raise Problem(404, "event_not_found")
    return {"seats": row["seat_count"], "tickets_per_account": row["max_tickets_per_account"],
            "rate_min": row["admission_rate_min"], "rate_max": row["admission_rate_max"],
            "active_cap": row["active_cap"], "session_seconds": row["hold_ttl_seconds"]}


async def fairness(request: Request) -> Response:
    require_admin(request)
    body = await read_body(request, FairnessScenario, FAIRNESS_CODES)
    defaults = None
    if body.event_id is not None:
        defaults = await event_defaults(edge_state(request), body.event_id)
    given = {k: v for k, v in msgspec.structs.asdict(body).items()
             if k != "event_id" and v is not UNSET}
    try:
        scenario = parse_scenario(given, defaults)
    except FairnessInputError as exc:
        raise Problem(400, "invalid_request", detail=exc.message, field=exc.field) from None
    gate = edge_state(request).ops.simulating
    if gate.locked():
        raise Problem(429, "rate_limited", detail="Another simulation is running.",
                      retry_after=1)
    async with gate:
        started = time.monotonic()
        doc = await asyncio.to_thread(compare, scenario)
    doc["event_id"] = body.event_id
    doc["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    return JSONResponse(doc)


routes = [
    Route("/api/ops/events/{event_id}/dashboard", dashboard, methods=["GET"]),
    Route("/api/ops/audit", audit, methods=["GET"]),
    Route("/api/ops/fairness", fairness, methods=["POST"]),
]

# -- their OpenAPI paths (merged into the edge document by edge/openapi.py) -------

_ADMIN: list[dict[str, list[str]]] = [{"admin": []}]

OPS_PATHS: dict[str, dict[str, Any]] = {
    "/api/ops/events/{event_id}/dashboard": {"get": {
        "summary": "The console's live figures: queue, controller, core health, open "
                   "payments, change-capture lag (operator; cached about a second)",
        "security": _ADMIN, "parameters": [EVENT_ID],
        "responses": {"200": json_body("OpsDashboard"), "401": problem("admin_required"),
                      "404": problem("event_not_found"), "429": problem("rate_limited"),
                      "503": problem("queue_unavailable", "inventory_unavailable")}}},
    "/api/ops/audit": {"get": {
        "summary": "The invariant checks of onsale audit (operator; cached: run at most "
                   "every 30 s, or every 10 s with fresh=1)",
        "security": _ADMIN,
        "parameters": [{"name": "fresh", "in": "query", "required": False,
                        "schema": {"type": "string", "enum": ["1", "true"]}}],
        "responses": {"200": json_body("OpsAudit"), "400": problem("invalid_request"),
                      "401": problem("admin_required"),
                      "429": problem("rate_limited"),
                      "503": problem("inventory_unavailable")}}},
    "/api/ops/fairness": {"post": {
        "summary": "The fairness lab: simulate fifo and a random draw for an arrival "
                   "profile (operator; nothing is stored)",
        "description": "Rules between fields, each a 400 invalid_request naming the field: "
                       "arrivals or preset, not both; rate_min <= rate_max; onsale_second "
                       "within the profile; 1 to 1,000,000 visitors and at most 2,000,000 "
                       "devices in all.",
        "security": _ADMIN,
        "requestBody": request_body("FairnessScenario"),
        "responses": {"200": json_body("FairnessResult"),
                      "400": problem("invalid_request", "invalid_json"),
                      "401": problem("admin_required"), "404": problem("event_not_found"),
                      "429": problem("rate_limited"),
                      "503": problem("inventory_unavailable")}}},
}
