"""The operator console (docs/console.md): sign-in with the admin token, the
event list, one event's live dashboard, and the fairness lab.

The pages themselves carry nothing secret (the event list is public, as in
``GET /api/events``); every operator figure and action comes from the
``/api/ops/...`` routes, called by the page's JavaScript with the token the
operator pasted, kept in the tab's sessionStorage and sent as
``Authorization: Bearer`` (``web/static/js/ops.js``). The pages are mounted
under ``/ops`` (a Mount, so ``/ops`` redirects to ``/ops/``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from onsale.core.queries import queries
from onsale.kernel.db import Database
from onsale.kernel.inputs import int_path, parse_id
from onsale.kernel.problems import Problem
from onsale.web.templating import render

POLICY_WORDS = {
    "fifo": "first come, first served",
    "random": "random draw at the opening for everyone who arrives before",
    "passthrough": "no queue: straight in",
}


def when(value: datetime | None) -> str:
    """``Tue 1 Dec 2026, 14:30 UTC`` (the console shows UTC, like the API)."""
    if value is None:
        return "not set"
    v = value.astimezone(UTC)
    return f"{v:%a} {v.day} {v:%b %Y}, {v:%H:%M} UTC"


def event_view(row: Any, now: datetime) -> dict[str, Any]:
    onsale = row["onsale_at"]
    return {
        "event_id": row["event_id"], "name": row["name"], "venue_name": row["venue_name"],
        "seat_count": row["seat_count"], "policy": row["queue_policy"],
        "policy_words": POLICY_WORDS.get(row["queue_policy"], row["queue_policy"]),
        "onsale_when": when(onsale), "starts_when": when(row["starts_at"]),
        "prequeue_when": when(row["prequeue_at"]) if row["prequeue_at"] else
        "as soon as the event exists",
        "sale_open": now >= onsale, "over": now >= row["starts_at"],
        "max_tickets_per_account": row["max_tickets_per_account"],
        "onsale_iso": onsale.astimezone(UTC).isoformat(),
        "prequeue_seconds": int((onsale - row["prequeue_at"]).total_seconds())
        if row["prequeue_at"] else 0,
    }


async def _events(request: Request, event_id: int | None = None) -> list[dict[str, Any]]:
    db: Database = request.app.state.db
    async with db.connection() as conn:
        rows = await conn.fetch(queries("events")["events"], event_id)
        now = await conn.fetchval("SELECT now()")
    return [event_view(r, now) for r in rows]


async def signin_page(request: Request) -> Response:
    return await render(request, "ops/signin.html")


async def index_page(request: Request) -> Response:
    return await render(request, "ops/index.html", events=await _events(request))


async def event_page(request: Request) -> Response:
    try:
        event_id = int_path(request, "event_id", "event_not_found")
        found = await _events(request, event_id)
    except Problem as problem:
        if problem.code != "event_not_found":
            raise
        found = []
    if not found:
        return await render(request, "ops/missing.html", status_code=404)
    return await render(request, "ops/event.html", event=found[0])


async def fairness_page(request: Request) -> Response:
    chosen = request.query_params.get("event", "")
    return await render(request, "ops/fairness.html", events=await _events(request),
                  chosen=parse_id(chosen))


routes: list[BaseRoute] = [
    Mount("/ops", routes=[
        Route("/", index_page, methods=["GET"], name="ops_index"),
        Route("/signin", signin_page, methods=["GET"], name="ops_signin"),
        Route("/fairness", fairness_page, methods=["GET"], name="ops_fairness"),
        Route("/events/{event_id}", event_page, methods=["GET"], name="ops_event"),
    ]),
]
