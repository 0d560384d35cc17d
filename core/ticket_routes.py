"""What a gate syncs before doors open (docs/tickets.md): an event's ticket keys and its
revoked tickets. Both public and cacheable; the revocations carry an ETag."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from onsale.core.queries import queries
from onsale.core.read_model import ticket_keys
from onsale.core.state import core_state
from onsale.core.ticket_token import keys_document
from onsale.kernel.inputs import etag_matches, int_path
from onsale.kernel.problems import Problem
from onsale.kernel.shared import shared
from onsale.kernel.timefmt import utc_iso

KEYS_CACHE_CONTROL = "public, max-age=300"
REVOCATIONS_CACHE_CONTROL = "public, max-age=30"


def parse_since(raw: str | None) -> datetime | None:
    """``?since=``: an ISO 8601 instant with a zone (a previous answer's ``as_of``)."""
    if raw is None:
        return None
    try:
        since: datetime | None = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        if since is not None and since.tzinfo is not None:
            since = since.astimezone(UTC)  # out of range near year 1 or 9999: refused
    except (ValueError, OverflowError):
        since = None
    if since is None or since.tzinfo is None:
        raise Problem(400, "invalid_request", field="since",
                      detail="since must be an ISO 8601 time with a zone, such as a "
                             "previous answer's as_of")
    return since


def revocations_document(event_id: int, rows: list[Any], as_of: datetime,
                         since: datetime | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"event_id": event_id, "as_of": utc_iso(as_of),
                           "revoked": [{"ticket_id": str(r["ticket_id"]),
                                        "reason": r["reason"],
                                        "revoked_at": utc_iso(r["revoked_at"])}
                                       for r in rows]}
    if since is not None:
        doc["since"] = utc_iso(since)
    return doc


def revocations_etag(doc: dict[str, Any]) -> str:
    """A strong validator of the list itself (not of ``as_of``, which moves each read)."""
    listed = orjson.dumps([doc["event_id"], doc.get("since"), doc["revoked"]])
    return '"' + hashlib.sha256(listed).hexdigest()[:32] + '"'


async def _event(request: Request) -> tuple[int, Any, Any]:
    event_id = int_path(request, "event_id", "event_not_found")
    db = await core_state(request).shards.for_event(event_id)
    hours = shared(request).settings.ticket_valid_hours
    async with db.connection() as conn:
        row = await conn.fetchrow(queries("tickets")["ticket_event"], event_id, hours)
    if row is None:
        raise Problem(404, "event_not_found")
    return event_id, db, row


async def get_ticket_keys(request: Request) -> Response:
    event_id, _db, row = await _event(request)
    doc = keys_document(ticket_keys(shared(request).settings), event_id, row["ends_at"])
    return Response(orjson.dumps(doc), media_type="application/json",
                    headers={"Cache-Control": KEYS_CACHE_CONTROL})


async def get_ticket_revocations(request: Request) -> Response:
    since = parse_since(request.query_params.get("since"))
    event_id, db, row = await _event(request)
    async with db.connection() as conn:
        rows = await conn.fetch(queries("tickets")["ticket_revocations"], event_id, since)
    # as_of is a little before the read, so a sync from it misses no later change
    doc = revocations_document(event_id, rows, row["db_now"] - timedelta(seconds=1), since)
    headers = {"ETag": revocations_etag(doc), "Cache-Control": REVOCATIONS_CACHE_CONTROL}
    if etag_matches(request.headers.get("if-none-match", ""), headers["ETag"]):
        return Response(status_code=304, headers=headers)
    return Response(orjson.dumps(doc), media_type="application/json", headers=headers)


routes = [
    Route("/api/events/{event_id}/ticket-keys", get_ticket_keys, methods=["GET"]),
    Route("/api/events/{event_id}/ticket-revocations", get_ticket_revocations,
          methods=["GET"]),
]
