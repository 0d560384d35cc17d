"""Operator routes for general admission: see a tier's stripes, rebalance it, change
its stripe count while on sale (docs/general-admission.md#operators)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from onsale.core import request_bodies as bodies
from onsale.core.ga_quota import rebalance_tier
from onsale.core.hold_store import refusals_as_problems
from onsale.core.queries import queries
from onsale.core.request_bodies import MAX_GA_TIER_ID
from onsale.core.state import core_state
from onsale.kernel.auth import require_admin
from onsale.kernel.bodies import read_body
from onsale.kernel.inputs import int_path
from onsale.kernel.problems import Problem
from onsale.kernel.responses import JSONResponse
from onsale.kernel.timefmt import utc_iso


def tier_json(row: Any) -> dict[str, Any]:
    stripes = row["stripe_counts"] or []
    return {
        "tier_id": row["tier_id"], "name": row["name"], "price_minor": row["price_minor"],
        "capacity": row["capacity"], "stripes": row["stripes"],
        "max_per_hold": row["max_per_hold"], "max_per_account": row["max_per_account"],
        "available": sum(s["available"] for s in stripes),
        "held": sum(s["held"] for s in stripes),
        "sold": sum(s["sold"] for s in stripes),
        "stripe_counts": stripes,
        "recent_rebalances": row["recent_rebalances"],
    }


async def _report(conn: Any, event_id: int) -> list[dict[str, Any]]:
    return [tier_json(r) for r in await conn.fetch(queries("ga")["tier_report"], event_id)]


def tier_id_path(request: Request) -> int:
    """The ``tier_id`` path parameter: a GA tier id (a smallint), or 404."""
    tier_id = int_path(request, "tier_id", "ga_tier_not_found")
    if tier_id > MAX_GA_TIER_ID:
        raise Problem(404, "ga_tier_not_found", tier_id=tier_id)
    return tier_id


def _tier(tiers: list[dict[str, Any]], tier_id: int) -> dict[str, Any]:
    for tier in tiers:
        if tier["tier_id"] == tier_id:
            return tier
    raise Problem(404, "ga_tier_not_found", tier_id=tier_id)


async def get_ga(request: Request) -> Response:
    require_admin(request)
    event_id = int_path(request, "event_id", "event_not_found")
    db = await core_state(request).shards.for_event(event_id)
    async with db.connection() as conn:
        now = await conn.fetchval(queries("ga")["event_clock"], event_id)
        tiers = await _report(conn, event_id)
    if now is None:
        raise Problem(404, "event_not_found")
    return JSONResponse({"event_id": event_id, "ga_tiers": tiers, "at": utc_iso(now)})


async def post_rebalance(request: Request) -> Response:
    """Even out a tier's available places over its active stripes now."""
    require_admin(request)
    event_id = int_path(request, "event_id", "event_not_found")
    tier_id = tier_id_path(request)
    state = core_state(request)
    async with (await state.shards.for_event(event_id)).connection() as conn:
        _tier(await _report(conn, event_id), tier_id)
        moved = await rebalance_tier(conn, state.metrics, event_id, tier_id,
                                     reason="operator", force=True)
        tier = _tier(await _report(conn, event_id), tier_id)
    return JSONResponse({"moved": moved, "tier": tier})


async def get_tier(request: Request) -> Response:
    require_admin(request)
    event_id = int_path(request, "event_id", "event_not_found")
    tier_id = tier_id_path(request)
    db = await core_state(request).shards.for_event(event_id)
    async with db.connection() as conn:
        tier = _tier(await _report(conn, event_id), tier_id)
    return JSONResponse(tier)


async def patch_tier(request: Request) -> Response:
    """``{"stripes": N}``: the tier's number of active stripes, on sale or not; the
    places are spread over the new stripes at once."""
    require_admin(request)
    event_id = int_path(request, "event_id", "event_not_found")
    tier_id = tier_id_path(request)
    n = (await read_body(request, bodies.StripesRequest, bodies.OPERATOR_CODES)).stripes
    state = core_state(request)
    async with (await state.shards.for_event(event_id)).connection() as conn:
        with refusals_as_problems():
            await conn.fetchval(queries("ga")["set_stripes"], event_id, tier_id, n)
        moved = await rebalance_tier(conn, state.metrics, event_id, tier_id,
                                     reason="stripes_changed", force=True)
        tier = _tier(await _report(conn, event_id), tier_id)
    return JSONResponse({"moved": moved, "tier": tier})


async def tier_resource(request: Request) -> Response:
    return await (patch_tier(request) if request.method == "PATCH" else get_tier(request))


routes = [
    Route("/api/ops/events/{event_id}/ga", get_ga, methods=["GET"]),
    Route("/api/ops/events/{event_id}/ga/{tier_id}/rebalance", post_rebalance,
          methods=["POST"]),
    Route("/api/ops/events/{event_id}/ga/{tier_id}", tier_resource, methods=["GET", "PATCH"]),
]
