"""The operator console (docs/console.md): sign-in with the admin token, the
event list, one event's live dashboard, and the fairness lab.

The pages themselves carry nothing secret (the event list is public: the
documents of ``GET /api/events``, from ``core/read_model.py``); every operator
figure and action comes from the ``/api/ops/...`` routes, called by the page's
JavaScript with the token the operator pasted, kept in the tab's sessionStorage
and sent as ``Authorization: Bearer`` (``web/static/js/ops.js``). The pages are
mounted under ``/ops`` (a Mount, so ``/ops`` redirects to ``/ops/``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from onsale.core.read_model import event_listing
from onsale.kernel.inputs import int_path, parse_id
from onsale.kernel.problems import Problem
from onsale.kernel.shared import shared
from onsale.kernel.timefmt import parse_utc_iso
from onsale.kernel.venue_time import venue_when
from onsale.web.templating import render

POLICY_WORDS = {
    "fifo": "first come, first served",
    "random": "random draw at the opening for everyone who arrives before",
    "passthrough": "no queue: straight in",
}


def when(value: datetime | None, zone: str | None = None) -> str:
    """``Tue 1 Dec 2026, 14:30 UTC``, in the venue's ``zone`` when given (the browser
    adds the operator's own zone beside it, local_time.js)."""
    if value is None:
        return "not set"
    return venue_when(value, zone)


def event_view(doc: dict[str, Any], now: datetime) -> dict[str, Any]:
    """An event document (``GET /api/events/{event_id}``) in the console's words,
    judged by ``now`` (the database's clock)."""
    onsale = parse_utc_iso(doc["onsale_at"])
    starts = parse_utc_iso(doc["starts_at"])
    policy = doc["queue"]["policy"]
    prequeue = doc["queue"]["prequeue_at"]
    prequeue_at = parse_utc_iso(prequeue) if prequeue else None
    zone = doc.get("time_zone")
    return {
        "event_id": doc["event_id"], "name": doc["name"], "venue_name": doc["venue_name"],
        "seat_count": doc["seat_count"], "shard": doc.get("shard"), "policy": policy,
        "policy_words": POLICY_WORDS.get(policy, policy),
        "onsale_when": when(onsale, zone), "starts_when": when(starts, zone),
        "prequeue_when": (when(prequeue_at, zone) if prequeue_at
                          else "as soon as the event exists"),
        "time_zone": zone or "UTC", "starts_iso": doc["starts_at"],
        "prequeue_iso": prequeue or "",
        "sale_open": now >= onsale, "over": now >= starts,
        "max_tickets_per_account": doc["max_tickets_per_account"],
        "onsale_iso": onsale.astimezone(UTC).isoformat(),
        "prequeue_seconds": int((onsale - prequeue_at).total_seconds()) if prequeue_at else 0,
    }


async def _events(request: Request, event_id: int | None = None) -> list[dict[str, Any]]:
    listing = await event_listing(shared(request).shard_set, event_id, operator=True)
    return [event_view(doc, listing.now) for doc in listing.events]


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
