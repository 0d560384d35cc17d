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
  event's settings as defaults, on a JSON scenario or on an uploaded arrivals CSV
  (``Content-Type: text/csv``, the settings as query parameters; at most
  ``MAX_UPLOAD`` bytes); the answer carries the files a sweep writes. One simulation
  at a time per process, in the lab's worker process (edge/fairness_worker.py), so
  neither the event loop nor the GIL of the process serving the queue waits for it.
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
from onsale.edge.fairness import FairnessInputError, parse_scenario
from onsale.edge.fairness_lab import LabRefusal, run_scenario, run_upload
from onsale.edge.fairness_worker import WorkerDied
from onsale.edge.health import FRESH_SECONDS, fold
from onsale.edge.ops import queue_doc
from onsale.edge.queries import queries
from onsale.edge.request_bodies import FAIRNESS_CODES, FairnessScenario, FairnessUpload
from onsale.edge.runtime import Edge, edge_state
from onsale.kernel.auth import require_admin
from onsale.kernel.bodies import read_body
from onsale.kernel.dependency import describe
from onsale.kernel.inputs import int_path
from onsale.kernel.openapi import (
    EVENT_ID,
    json_body,
    problem,
    query_parameters,
    request_body,
)
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


MAX_UPLOAD = 8 * 2**20  # bytes of an uploaded arrivals CSV (onsale fairness sweep: any)
_UPLOAD_TOO_LARGE = (f"The arrivals CSV is larger than the lab takes ({MAX_UPLOAD // 2**20} "
                     "MiB); run onsale fairness sweep --arrivals on it instead.")


def is_csv(content_type: str | None) -> bool:
    return (content_type or "").partition(";")[0].strip().lower() == "text/csv"


def upload_settings(request: Request) -> FairnessUpload:
    """The query parameters of a run on a CSV, each at most once."""
    seen: set[str] = set()
    known = FairnessUpload.__struct_fields__
    for name, _ in request.query_params.multi_items():
        if name in seen:
            raise Problem(400, "invalid_request", detail=f"{name} is given more than once.",
                          field=name)
        if name not in known:
            raise Problem(400, "invalid_request", field=name, detail=(
                f"{name} is no setting of a run on a CSV (the file gives the crowd); "
                f"known: {', '.join(sorted(known))}."))
        seen.add(name)
    try:
        return msgspec.convert(dict(request.query_params), FairnessUpload, strict=False)
    except msgspec.ValidationError as error:
        raise FAIRNESS_CODES.refuse(error) from None


async def read_upload(request: Request) -> bytes:
    """The body, refused with 413 past ``MAX_UPLOAD`` (by Content-Length before it is
    read, else as it streams)."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_UPLOAD:
        raise Problem(413, "payload_too_large", detail=_UPLOAD_TOO_LARGE)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_UPLOAD:
            raise Problem(413, "payload_too_large", detail=_UPLOAD_TOO_LARGE)
        chunks.append(chunk)
    return b"".join(chunks)


async def upload_job(request: Request) -> tuple[int | None, tuple[Any, ...]]:
    """The event and the worker's job of a run on an uploaded CSV (read there too)."""
    settings = upload_settings(request)
    raw = await read_upload(request)
    event_id = None if settings.event_id is UNSET else settings.event_id
    defaults = None if event_id is None else await event_defaults(edge_state(request),
                                                                   event_id)
    given = {k: v for k, v in msgspec.structs.asdict(settings).items()
             if k not in ("event_id", "opens_at") and v is not UNSET}
    opens_at = None if settings.opens_at is UNSET else settings.opens_at
    return event_id, (run_upload, raw, given, defaults, opens_at)


async def scenario_job(request: Request) -> tuple[int | None, tuple[Any, ...]]:
    """The event and the worker's job of a run on a JSON scenario."""
    for name in request.query_params:
        raise Problem(400, "invalid_request", field=name, detail=(
            "Query parameters go with a text/csv body; put the settings in the JSON body."))
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
    return body.event_id, (run_scenario, scenario)


async def fairness(request: Request) -> Response:
    require_admin(request)
    if is_csv(request.headers.get("content-type")):
        event_id, job = await upload_job(request)
    else:
        event_id, job = await scenario_job(request)
    ops = edge_state(request).ops
    if ops.simulating.locked():
        raise Problem(429, "rate_limited", detail="Another simulation is running.",
                      retry_after=1)
    async with ops.simulating:
        started = time.monotonic()
        try:
            doc: dict[str, Any] = await ops.lab.call(*job)
        except LabRefusal as refused:
            line = {} if refused.line is None else {"line": refused.line}
            raise Problem(400, refused.code, detail=refused.detail, field=refused.field,
                          **line) from None
        except WorkerDied:
            raise Problem(503, "lab_unavailable", detail=(
                "The lab's worker process stopped during this run (killed, or out of "
                "memory?); a new one starts with the next run.")) from None
    doc["event_id"] = event_id
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
                   "profile or an uploaded arrivals CSV (operator; nothing is stored)",
        "description": "The body is a JSON scenario (FairnessScenario, no query "
                       "parameters), or with Content-Type: text/csv an arrivals CSV as "
                       "onsale fairness sweep --arrivals reads it (at[,account,device,bot]; "
                       "at most 8 MiB, past it 413 payload_too_large), the settings then "
                       "in the query parameters; a line of it the lab cannot read is a 400 "
                       "invalid_arrivals naming the line (detail, line). Rules between "
                       "fields, each a 400 invalid_request naming the field: arrivals or "
                       "preset, not both; rate_min <= rate_max; onsale_second within the "
                       "profile; 1 to 1,000,000 visitors and at most 2,000,000 devices in "
                       "all. Runs in the lab's worker process: 503 lab_unavailable if it "
                       "stops during the run.",
        "security": _ADMIN,
        "parameters": query_parameters(FairnessUpload),
        "requestBody": {"required": True, "content": {
            **request_body("FairnessScenario")["content"],
            "text/csv": {"schema": {"type": "string"}}}},
        "responses": {"200": json_body("FairnessResult"),
                      "400": problem("invalid_request", "invalid_json", "invalid_arrivals"),
                      "401": problem("admin_required"), "404": problem("event_not_found"),
                      "413": problem("payload_too_large"),
                      "429": problem("rate_limited"),
                      "503": problem("inventory_unavailable", "lab_unavailable")}}},
}
