"""``GET /api/ops/events/{event_id}/arrivals`` (operator): the queue's record of who
joined when, as the CSV the fairness lab replays (edge/fairness_crowd.py,
``onsale fairness export``, docs/fairness.md).

One row per account, oldest first: ``at`` (its first join, Unix seconds by the edge's
clock), ``account`` and ``device`` (the device of its session, if it claimed one). Both
are keyed hashes under a key made for this answer alone, so a file names no account and
two exports cannot be joined on them; within one file an account is one value. The
``Sale-Opens-At`` header is the event's opening on the same clock."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from onsale.edge.fairness_crowd import crowd_csv
from onsale.edge.queue_store import QUEUE_STORE_DOWN
from onsale.edge.routes import event_config
from onsale.edge.runtime import edge_state
from onsale.kernel.auth import require_admin
from onsale.kernel.inputs import int_path
from onsale.kernel.openapi import EVENT_ID, problem
from onsale.kernel.problems import Problem


def pseudonym(key: bytes, value: str) -> str:
    """``value`` under ``key``: 16 hex digits, "" for ""."""
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()[:16] if value else ""


async def arrivals(request: Request) -> Response:
    require_admin(request)
    edge = edge_state(request)
    event_id = int_path(request, "event_id", "event_not_found")
    config = await event_config(edge, event_id)
    key = secrets.token_bytes(32)
    pages = edge.store.joins(event_id)
    try:  # the first page before the answer starts: an outage is a 503, not a cut file
        first: list[tuple[str, float, str]] = await anext(pages, [])
    except Exception as exc:
        raise Problem(503, "queue_unavailable", detail=QUEUE_STORE_DOWN) from exc

    def rows(page: list[tuple[str, float, str]]) -> str:
        return crowd_csv((at, pseudonym(key, account), pseudonym(key, device))
                         for account, at, device in page)

    async def body() -> AsyncIterator[str]:
        yield rows(first)
        async for page in pages:
            yield rows(page).partition("\n")[2]  # the header once

    opens = config.onsale_at - config.clock_offset
    return StreamingResponse(body(), media_type="text/csv; charset=utf-8", headers={
        "Sale-Opens-At": f"{opens:.3f}", "Cache-Control": "no-store",
        "Content-Disposition": f'attachment; filename="arrivals-{event_id}.csv"'})


routes = [Route("/api/ops/events/{event_id}/arrivals", arrivals, methods=["GET"])]

ARRIVALS_PATHS: dict[str, dict[str, Any]] = {
    "/api/ops/events/{event_id}/arrivals": {"get": {
        "summary": "Who joined the queue when, as the fairness lab's CSV (operator; "
                   "accounts and devices as keyed hashes)",
        "security": [{"admin": []}], "parameters": [EVENT_ID],
        "responses": {
            "200": {"description": "at,account,device rows, oldest first; the "
                                   "Sale-Opens-At header is the opening (Unix seconds)",
                    "content": {"text/csv": {"schema": {"type": "string"}}}},
            "401": problem("admin_required"), "404": problem("event_not_found"),
            "429": problem("rate_limited"),
            "503": problem("queue_unavailable", "inventory_unavailable")}}},
}
