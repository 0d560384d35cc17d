"""The shopper's pages before the seat map: sign up, sign in, sign out, the
event list, one event, and its waiting room (docs/web.md).

The pages read events through the same read model as ``GET /api/events``
(``core/read_model.py``: the same documents); everything that changes while a page is
open (queue position, admission) comes from the JSON API, called by the
page's JavaScript (``web/static/js/account.js``, ``queue.js``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from onsale.core.read_model import event_document, event_documents
from onsale.edge.tokens import ticket_cookie
from onsale.kernel.cookies import settings_cookie_policy
from onsale.kernel.inputs import parse_id
from onsale.kernel.problems import Problem
from onsale.kernel.shared import shared
from onsale.kernel.venue_time import venue_clock, venue_when
from onsale.web.templating import problem_page, render, signed_in_account

ZERO_DECIMAL = frozenset({"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG",
                          "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"})


# ---- wording (pure) --------------------------------------------------------

def parse_time(value: str) -> datetime:
    """An API instant (``2026-11-29T10:14:15.613054Z``) as an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def clock(value: datetime, zone: str | None = None) -> str:
    """``14:30 UTC``, ``19:30 CET``: the time of day at the venue (``zone``; UTC when
    None). The API keeps UTC; the browser adds the shopper's own zone (local_time.js)."""
    return venue_clock(value, zone)


def when(value: datetime, zone: str | None = None) -> str:
    """``Tue 1 Dec 2026, 14:30 UTC``; in the venue's ``zone`` when given."""
    return venue_when(value, zone)


def policy_words(policy: str, onsale_at: datetime, zone: str | None = None) -> str:
    """The queue policy in plain words (docs/edge.md#policies)."""
    if policy == "fifo":
        return "first come, first served"
    if policy == "random":
        return f"random draw at {clock(onsale_at, zone)} for everyone who arrives before"
    if policy == "passthrough":
        return "no queue: straight in"
    return "a queue decides the order of entry"


def money(minor: int, currency: str) -> str:
    """``150.00 USD`` (``1,500 JPY`` for currencies without minor units)."""
    if currency.upper() in ZERO_DECIMAL:
        return f"{minor:,} {currency}"
    return f"{minor / 100:,.2f} {currency}"


def safe_next(value: str | None) -> str:
    """Where to go after signing in: a path on this site only (no open redirect)."""
    if (not value or not value.startswith("/") or value.startswith("//")
            or "\\" in value or any(ord(c) < 32 for c in value)):
        return "/"
    return value


def event_view(doc: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The API's event JSON plus what the templates show in words."""
    onsale_at = parse_time(doc["onsale_at"])
    starts_at = parse_time(doc["starts_at"])
    queue = doc["queue"]
    prequeue_at = parse_time(queue["prequeue_at"]) if queue["prequeue_at"] else None
    zone = doc.get("time_zone")
    return {
        **doc,
        "onsale_when": when(onsale_at, zone),
        "starts_when": when(starts_at, zone),
        "prequeue_when": when(prequeue_at, zone) if prequeue_at else None,
        "policy": queue["policy"],
        "policy_words": policy_words(queue["policy"], onsale_at, zone),
        "sale_open": now >= onsale_at,
        "queue_open": prequeue_at is None or now >= prequeue_at,
        "over": now >= starts_at,
        "draw": queue["draw"],
        "pow_difficulty": queue["pow_difficulty"],
        "tiers": [{"name": t["name"], "price": money(t["price_minor"], doc["currency"])}
                  for t in doc["price_tiers"]],
        "ga": [{**t, "price": money(t["price_minor"], doc["currency"])}
               for t in doc.get("ga_tiers", [])],
    }


# ---- data ------------------------------------------------------------------

async def _events(request: Request) -> list[dict[str, Any]]:
    docs = await event_documents(shared(request).shard_set)
    now = datetime.now(UTC)
    return [event_view(doc, now) for doc in docs]


def _event_id(request: Request) -> int | None:
    return parse_id(request.path_params["event_id"])


async def _one_event(request: Request) -> dict[str, Any] | Response:
    event_id = _event_id(request)
    try:
        doc = None if event_id is None else await event_document(shared(request).shard_set,
                                                                 event_id)
    except Problem as problem:
        return await problem_page(request, problem.status, problem.code)
    if doc is None:
        return await problem_page(request, 404, "event_not_found")
    return event_view(doc, datetime.now(UTC))


# ---- pages -----------------------------------------------------------------

async def event_list(request: Request) -> Response:
    try:
        events = await _events(request)
    except Problem as problem:
        return await problem_page(request, problem.status, problem.code)
    return await render(request, "shop/events.html", events=events)


async def event_page(request: Request) -> Response:
    event = await _one_event(request)
    if isinstance(event, Response):
        return event
    queue_path = f"/events/{event['event_id']}/queue"
    return await render(request, "shop/event.html", event=event, queue_path=queue_path,
                  signin_path=f"/signin?next={quote(queue_path, safe='/')}")


async def waiting_room(request: Request) -> Response:
    if await signed_in_account(request) is None:
        target = quote(request.url.path, safe="/")
        return RedirectResponse(f"/signin?next={target}", status_code=303)
    event = await _one_event(request)
    if isinstance(event, Response):
        return event
    event_id = event["event_id"]
    return await render(request, "shop/queue.html", event=event,
                  joined=ticket_cookie(event_id, _cookie_prefix(request)) in request.cookies,
                  seats_path=f"/events/{event_id}/seats",
                  server_now_ms=int(time.time() * 1000))


def _cookie_prefix(request: Request) -> str:
    """The queue-ticket cookie's name prefix, as ``edge.routes`` sets it."""
    return settings_cookie_policy(shared(request).settings).prefix


async def signin_page(request: Request) -> Response:
    return await render(request, "shop/signin.html",
                        next=safe_next(request.query_params.get("next")))


async def signup_page(request: Request) -> Response:
    return await render(request, "shop/signup.html",
                        next=safe_next(request.query_params.get("next")))


async def signout(request: Request) -> Response:
    """End this session (every copy of its cookie) and go home: the API's
    ``DELETE /api/session`` does the same for scripts."""
    sessions = shared(request).sessions
    await sessions.revoke(sessions.token(request))  # 503 page if it cannot be revoked
    response = RedirectResponse("/", status_code=303)
    sessions.clear_cookie(response)
    return response


routes = [
    Route("/", event_list, methods=["GET"]),
    Route("/events/{event_id}", event_page, methods=["GET"]),
    Route("/events/{event_id}/queue", waiting_room, methods=["GET"]),
    Route("/signin", signin_page, methods=["GET"]),
    Route("/signup", signup_page, methods=["GET"]),
    Route("/signout", signout, methods=["POST"]),
]
