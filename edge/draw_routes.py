"""``GET /api/events/{id}/queue/draw``: the published random draw, a page at a time.

Before the seed is revealed the answer is the commitment alone, ``no-store``.
Once published, a page never changes: it is encoded once per process and served
from memory (``edge/draw_pages.py``) with a strong ``ETag`` and ``Cache-Control:
public, max-age=31536000, immutable``; ``If-None-Match`` is answered ``304`` from
memory. The database reads only the chunks of the page it sends (migration 0006).
Throttled per client address (``ONSALE_DRAW_LIMIT_IP``).
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from onsale.edge.draw_pages import Built, DrawPage, DrawSlice, Unpublished, draw_slice
from onsale.edge.limits import retry_after
from onsale.edge.queries import queries
from onsale.edge.runtime import Edge, edge_state
from onsale.kernel.addresses import client_bucket
from onsale.kernel.inputs import etag_matches, int_path
from onsale.kernel.problems import Problem
from onsale.kernel.timefmt import utc_iso

IMMUTABLE = "public, max-age=31536000, immutable"
METHOD = ("place i = i-th participant sorted by HMAC-SHA256(key=k, msg=id), hex ascending, "
          "where k = sha256(seed || beacon randomness) hex, or the seed alone without a "
          "beacon or after the operator's fallback; check sha256(seed) == commitment and "
          "the beacon round against the chain's key (python -m onsale.edge.draw)")


def past_the_end(wanted: DrawSlice, count: int) -> Problem:
    pages = wanted.pages(count)
    return Problem(404, "draw_page_not_found", pages=pages,
                   detail=f"The draw has {pages} page(s) of {wanted.per_page}.")


def beacon_part(row: Any) -> dict[str, Any] | None:
    """The beacon round committed with the seed, when the pre-queue closed, and the round
    drawn with (or the operator's fallback); None: the draw is by the seed alone."""
    if row["beacon_commitment"] is None:
        return None
    closed = row["draw_closed_at"]
    return {"commitment": row["beacon_commitment"],
            "closed_at": utc_iso(closed) if closed else None,
            "outcome": row["beacon_outcome"]}


async def _build(edge: Edge, event_id: int, wanted: DrawSlice) -> Built:
    async with edge.db.connection() as conn:
        row = await conn.fetchrow(queries("queue")["published_draw"], event_id,
                                  wanted.first, wanted.last)
    if row is None:
        raise Problem(404, "event_not_found")
    count = row["participant_count"]
    published = row["draw_seed"] is not None and count is not None
    doc: dict[str, Any] = {
        "event_id": event_id,
        "commitment": row["draw_commitment"],
        "seed": row["draw_seed"],
        "drawn_at": utc_iso(row["drawn_at"]) if row["drawn_at"] else None,
        "participant_count": count if published else None,
        "page": wanted.page, "per_page": wanted.per_page, "pages": None, "next": None,
        "participants": None,
        "beacon": beacon_part(row),
        "method": METHOD,
    }
    if not published:
        return Unpublished(orjson.dumps(doc))
    edge.draw_pages.remember(event_id, count)
    if not wanted.within(count):
        raise past_the_end(wanted, count)
    pages = wanted.pages(count)
    doc.update(pages=pages, participants=row["participants"] or [])  # text[]: str already
    if wanted.page < pages:
        doc["next"] = (f"/api/events/{event_id}/queue/draw?page={wanted.page + 1}"
                       f"&per_page={wanted.per_page}")
    return DrawPage.of(orjson.dumps(doc))


async def draw(request: Request) -> Response:
    """The published random draw: commitment, then seed and participants, a page at
    a time (``?page=1&per_page=10000``; ``next`` links the rest)."""
    edge = edge_state(request)
    wait = edge.draw_ip.allow(client_bucket(request))
    if wait > 0:
        raise Problem(429, "rate_limited", retry_after=retry_after(wait))
    event_id = int_path(request, "event_id", "event_not_found")
    wanted = draw_slice(request.query_params.multi_items(), edge.settings.draw_page_max)
    pages = edge.draw_pages
    count = pages.count(event_id)
    if count is not None and not wanted.within(count):
        raise past_the_end(wanted, count)
    key = (event_id, wanted.page, wanted.per_page)
    page = pages.get(key) or await pages.build(key, lambda: _build(edge, event_id, wanted))
    if isinstance(page, Unpublished):
        return Response(page.body, media_type="application/json",
                        headers={"Cache-Control": "no-store"})
    headers = {"ETag": page.etag, "Cache-Control": IMMUTABLE}
    if etag_matches(request.headers.get("if-none-match", ""), page.etag):
        return Response(status_code=304, headers=headers)
    return Response(page.body, media_type="application/json", headers=headers)


routes = [Route("/api/events/{event_id}/queue/draw", draw, methods=["GET"])]
