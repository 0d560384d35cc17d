"""Operator routes for one event's waiting room (Bearer ONSALE_ADMIN_TOKEN):
read the settings and live figures, change the settings, pause and resume."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.core.event_spec import QueueSpec, queue_spec
from onsale.core.event_store import commit_draw_seed
from onsale.core.request_bodies import QUEUE_SETTINGS_CODES
from onsale.edge.admission import eta_seconds
from onsale.edge.queries import queries
from onsale.edge.queue_store import QUEUE_STORE_DOWN
from onsale.edge.request_bodies import QueueUpdate, RiskThresholds
from onsale.edge.risk import Thresholds
from onsale.edge.runtime import Edge, edge_state
from onsale.edge.shard_copy import copy_to_shard
from onsale.kernel.auth import require_admin
from onsale.kernel.beacon_chain import chain_setting
from onsale.kernel.bodies import read_body
from onsale.kernel.inputs import int_path
from onsale.kernel.problems import Problem
from onsale.kernel.timefmt import utc_iso


def _iso(ts: float | None) -> str | None:
    return None if ts is None else utc_iso(datetime.fromtimestamp(ts, UTC))


async def queue_doc(edge: Edge, event_id: int) -> dict[str, Any]:
    edge.configs.forget(event_id)
    config = await edge.configs.get(event_id)
    if config is None:
        raise Problem(404, "event_not_found")
    try:
        figures = await edge.store.figures(event_id)
    except Exception as exc:
        raise Problem(503, "queue_unavailable", detail=QUEUE_STORE_DOWN) from exc
    status, stats = figures["status"], figures["stats"]
    measured = float(status.get("measured", 0))
    updated = float(status.get("updated", 0))
    return {
        "event_id": event_id,
        "settings": {
            "queue_policy": config.policy, "prequeue_at": _iso(config.prequeue_at),
            "onsale_at": _iso(config.onsale_at), "admission_rate_min": config.rate_min,
            "admission_rate_max": config.rate_max, "active_cap": config.cap,
            "pow_difficulty": config.pow_difficulty, "paused": config.paused,
            "policy_frozen": config.sale_open(),
            "draw_commitment": config.commitment, "draw_seed": config.seed,
            "risk": {"raised": config.risk.raised, "high": config.risk.high,
                     "refused": config.risk.refused},
        },
        "live": {
            "queued": figures["queued"], "prequeue": figures["prequeue"],
            "active": figures["active"], "admitted_not_arrived": figures["pending"],
            "serving": int(status.get("serving", 0)), "draw": status.get("draw"),
            "admitted_per_minute": measured,
            "eta_seconds_for_last": eta_seconds(figures["queued"], measured),
            "joined": stats.get("joined", 0), "admitted": stats.get("admitted", 0),
            "abandoned": stats.get("abandoned", 0), "no_show": stats.get("no_show", 0),
            "expired": stats.get("expired", 0), "revoked": stats.get("revoked", 0),
        },
        "controller": {
            "state": status.get("state"), "rate_per_minute": float(status.get("rate", 0)),
            "reasons": [r for r in status.get("reason", "").split("; ") if r],
            "paused": status.get("paused") == "1", "admitter": status.get("owner"),
            "updated_seconds_ago": round(time.time() - updated, 3) if updated else None,
        },
    }


async def read_queue(request: Request) -> Response:
    require_admin(request)
    edge = edge_state(request)
    return JSONResponse(await queue_doc(edge, int_path(request, "event_id", "event_not_found")))


async def update_queue(request: Request) -> Response:
    require_admin(request)
    edge = edge_state(request)
    event_id = int_path(request, "event_id", "event_not_found")
    body = await read_body(request, QueueUpdate, QUEUE_SETTINGS_CODES)
    risk = None
    if isinstance(body.risk, RiskThresholds):
        risk = Thresholds(body.risk.raised, body.risk.high, body.risk.refused)
        if (wrong := risk.problem()) is not None:
            raise Problem(400, "invalid_request", detail=wrong)
    q = queries("queue")
    async with edge.db.connection() as conn, conn.transaction():
        row = await conn.fetchrow(q["lock_queue_config"], event_id)
        if row is None:
            raise Problem(404, "event_not_found")
        current = QueueSpec(row["queue_policy"], row["prequeue_at"], row["admission_rate_min"],
                            row["admission_rate_max"], row["active_cap"], row["pow_difficulty"])
        spec = queue_spec(body, current, row["onsale_at"])
        if spec.policy != current.policy and row["sale_open"]:
            raise Problem(409, "policy_frozen", policy=current.policy)
        await conn.execute(q["update_queue"], event_id, spec.policy, spec.prequeue_at,
                           spec.admission_rate_min, spec.admission_rate_max, spec.active_cap,
                           spec.pow_difficulty)
        if risk is not None:
            await conn.execute(q["update_risk"], event_id, risk.raised, risk.high,
                               risk.refused)
        if spec.policy == "random":
            await commit_draw_seed(conn, event_id, chain_setting(edge.settings.beacon))
    await copy_to_shard(edge, event_id)
    return JSONResponse(await queue_doc(edge, event_id))


async def _pause(request: Request, paused: bool) -> Response:
    require_admin(request)
    edge = edge_state(request)
    event_id = int_path(request, "event_id", "event_not_found")
    async with edge.db.connection() as conn:
        found = await conn.fetchval(queries("queue")["set_paused"], event_id, paused)
    if found is None:
        raise Problem(404, "event_not_found")
    await copy_to_shard(edge, event_id)
    if paused:  # visitors see it at once; the admitter stops at its next tick
        await edge.store.publish(event_id, {"paused": 1, "state": "paused"})
    return JSONResponse(await queue_doc(edge, event_id))


async def pause(request: Request) -> Response:
    return await _pause(request, True)


async def resume(request: Request) -> Response:
    return await _pause(request, False)


async def queue_settings(request: Request) -> Response:
    return await (update_queue(request) if request.method == "PATCH" else read_queue(request))


routes = [
    Route("/api/ops/events/{event_id}/queue", queue_settings, methods=["GET", "PATCH"]),
    Route("/api/ops/events/{event_id}/queue/pause", pause, methods=["POST"]),
    Route("/api/ops/events/{event_id}/queue/resume", resume, methods=["POST"]),
]
