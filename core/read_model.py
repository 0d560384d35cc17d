"""The read side: events, holds and orders as the JSON documents the API returns.

The API routes (``core/events.py``, ``core/holds.py``, ``core/checkout.py``) and the
server-rendered pages (``web/``) both read through these functions, so a page and
the API cannot disagree about what an event, a hold or an order is. Nothing here
writes. Each ``*_document(db, ...)`` takes one pool connection; ``*_document_on(conn,
...)`` reads on a connection the caller already holds (inside its transaction, or
right after a write on the same connection). ``None`` means there is no such row
(or it belongs to another account): the caller says which 404 that is.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from onsale.core.hold_rules import effective_status
from onsale.core.order_list_rules import Cursor, in_progress, newest_first, parse_cursor
from onsale.core.queries import queries
from onsale.core.ticket_token import KeyRing, claims_of, key_ring, sign
from onsale.core.venue_cache import layout_path
from onsale.kernel.beacon_chain import beacon_summary
from onsale.kernel.config import Settings
from onsale.kernel.db import Database
from onsale.kernel.placement import Placement
from onsale.kernel.problems import Problem
from onsale.kernel.shards import ShardSet
from onsale.kernel.timefmt import utc_iso

log = logging.getLogger("onsale.core")

# ---- shaping: a row of the named query -> the API's JSON --------------------


def event_json(row: Any) -> dict[str, Any]:
    """An ``events`` row as ``GET /api/events/{event_id}`` returns it."""
    return {
        "event_id": row["event_id"],
        "name": row["name"],
        "venue_name": row["venue_name"],
        "time_zone": row["time_zone"],
        "starts_at": utc_iso(row["starts_at"]),
        "onsale_at": utc_iso(row["onsale_at"]),
        "currency": row["currency"],
        "seat_count": row["seat_count"],
        "hold_ttl_seconds": row["hold_ttl_seconds"],
        "max_tickets_per_account": row["max_tickets_per_account"],
        "max_seats_per_hold": row["max_seats_per_hold"],
        "price_tiers": row["tiers"] or [],
        "ga_tiers": row.get("ga_tiers") or [],
        "queue": queue_json(row),
        "links": {
            # The layout's immutable URL (cacheable forever); the event's own venue
            # URL serves the same bytes for older clients.
            "venue": (layout_path(row["event_id"], row["layout_etag"])
                      if row.get("layout_etag") else f"/api/events/{row['event_id']}/venue"),
            "holds": f"/api/events/{row['event_id']}/holds",
            "queue": f"/api/events/{row['event_id']}/queue",
        },
    }


def queue_json(row: Any) -> dict[str, Any]:
    """The published waiting-room policy (docs/edge.md): how places are given,
    from when, and the random draw's commitment, then its revealed seed."""
    return {
        "policy": row["queue_policy"],
        "prequeue_at": utc_iso(row["prequeue_at"]) if row["prequeue_at"] else None,
        "pow_difficulty": row["pow_difficulty"],
        "draw": None if row["draw_commitment"] is None else {
            "commitment": row["draw_commitment"],
            "seed": row["draw_seed"],
            "drawn_at": utc_iso(row["drawn_at"]) if row["drawn_at"] else None,
            "verify": f"/api/events/{row['event_id']}/queue/draw",
            "beacon": beacon_summary(row["beacon_commitment"], row["beacon_outcome"]),
        },
    }


def hold_json(row: Any) -> dict[str, Any]:
    """A ``get_hold`` row as ``GET /api/holds/{hold_id}`` returns it (a HELD hold
    past its deadline reads as EXPIRED, by the database's clock)."""
    return {
        "hold_id": str(row["hold_id"]),
        "event_id": row["event_id"],
        "status": effective_status(row["status"], row["expires_at"], row["db_now"]),
        "expires_at": utc_iso(row["expires_at"]),
        "seats": row["seats"],
        **({"ga": row["ga"]} if row["ga"] is not None else {}),
        "amount_minor": row["amount_minor"],
        "currency": row["currency"],
    }


def ticket_keys(settings: Settings) -> KeyRing:
    """The keys that sign tickets (ONSALE_TICKET_SIGNING_KEYS, or derived), built once."""
    return key_ring(settings.ticket_signing_keys, settings.secret_key)


def signed_tickets(tickets: list[dict[str, Any]], event_id: int, order_id: str,
                   keys: KeyRing) -> list[dict[str, Any]]:
    """Each ticket with ``value``, its signed value (docs/tickets.md), signed now by
    the first key: Ed25519 is deterministic, so the same key gives the same value."""
    signer = keys.signer
    return [{**t, "value": sign(claims_of(t, event_id, order_id, t["issued_at"], signer.kid),
                                signer)} for t in tickets]


def order_json(row: Any, keys: KeyRing) -> dict[str, Any]:
    """An ``order_for_account`` row as ``GET /api/orders/{order_id}`` returns it."""
    order_id = str(row["order_id"])
    return {
        "order_id": order_id,
        "hold_id": str(row["hold_id"]),
        "event_id": row["event_id"],
        "order_status": row["status"],
        "payment_status": row["payment_status"],
        "next_action": row["next_action"],
        "amount_minor": row["amount_minor"],
        "currency": row["currency"],
        "seats": row["seats"],
        **({"ga": row["ga"]} if row["ga"] is not None else {}),
        "tickets": signed_tickets(row["tickets"], row["event_id"], order_id, keys)
        if row["tickets"] else [],
        "cancel_reason": row["cancel_reason"],
        "hold_expires_at": utc_iso(row["expires_at"]),
        "payment_deadline": utc_iso(row["grace_until"]) if row["grace_until"] else None,
        "created_at": utc_iso(row["created_at"]),
        "updated_at": utc_iso(row["updated_at"]),
    }


def checkout_order_json(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The order document, as ``order_json`` would read it, built from the result of
    the apply that recorded a checkout's authorization (``onsale_payment_apply``'s
    ``order``): no read after the checkout. None when only a read can say: the apply
    did not change the order (another answer got there first, and a capture or tickets
    may have followed), or the order waits for a next action (3-D Secure)."""
    order = result.get("order")
    if (order is None or not result.get("applied") or result.get("mismatch")
            or result["payment_status"] == "REQUIRES_ACTION"):
        return None
    return {
        "order_id": str(result["order_id"]),
        "hold_id": str(order["hold_id"]),
        "event_id": order["event_id"],
        "order_status": result["order_status"],
        "payment_status": result["payment_status"],
        "next_action": None,
        "amount_minor": order["amount_minor"],
        "currency": order["currency"],
        "seats": order["seats"],
        **({"ga": order["ga"]} if order["ga"] is not None else {}),
        "tickets": [],
        "cancel_reason": order["cancel_reason"],
        "hold_expires_at": order["hold_expires_at"],
        "payment_deadline": order["payment_deadline"],
        "created_at": order["created_at"],
        "updated_at": order["updated_at"],
    }


# ---- events -----------------------------------------------------------------


@dataclass(frozen=True)
class EventListing:
    """Event documents and the database's clock when they were read (the
    console judges "on sale" and "over" by the clock holds are judged by)."""

    events: list[dict[str, Any]]
    now: datetime


async def event_document_on(conn: Any, event_id: int) -> dict[str, Any] | None:
    """The event's document read on ``conn``, a connection to the event's shard."""
    row = await conn.fetchrow(queries("events")["events"], [event_id])
    return None if row is None else event_json(row)


def operator_event_json(doc: dict[str, Any], shard_id: int) -> dict[str, Any]:
    """The operator's view of an event: the document and the shard it lives on."""
    return {**doc, "shard": shard_id}


async def event_document(shards: ShardSet, event_id: int) -> dict[str, Any] | None:
    """``GET /api/events/{event_id}``'s document, read on the event's shard (the cached
    placement names it); None: no such event."""
    try:
        db = await shards.for_event(event_id)
    except Problem as problem:
        if problem.code == "event_not_found":
            return None
        raise
    async with db.connection() as conn:
        return await event_document_on(conn, event_id)


async def event_documents(shards: ShardSet) -> list[dict[str, Any]]:
    """``GET /api/events``'s ``events``: every event, by on-sale time."""
    return (await event_listing(shards)).events


async def event_listing(shards: ShardSet, event_id: int | None = None, *,
                        operator: bool = False) -> EventListing:
    """Every event (or the one asked for: an empty list if there is none) and the
    database's ``now()``. Each shard is asked for the events the cached placement puts
    on it, at once, and the answers are merged in on-sale order; a shard that does not
    answer leaves its events out (the others are still listed), unless it is the only
    one asked. ``operator``: each document names its shard."""
    asked = _events_by_shard(shards.placement, event_id)
    if not asked:
        return EventListing([], await _now(shards.directory))
    answers = await asyncio.gather(*(_read_events(shards, s, ids)
                                     for s, ids in asked.items()), return_exceptions=True)
    rows: list[tuple[Any, int]] = []
    now: datetime | None = None
    for shard_id, answer in zip(asked, answers, strict=True):
        if isinstance(answer, BaseException):
            if len(asked) == 1 or not isinstance(answer, Problem):
                raise answer
            continue  # that shard's events are out of the list until it answers
        found, now = answer
        rows.extend((r, shard_id) for r in found)
    if now is None:
        raise Problem(503, "inventory_unavailable")
    rows.sort(key=lambda rs: (rs[0]["onsale_at"], rs[0]["event_id"]))
    return EventListing([operator_event_json(event_json(r), s) if operator else event_json(r)
                         for r, s in rows], now)


def _events_by_shard(placement: Placement, event_id: int | None) -> dict[int, list[int] | None]:
    """Which shard to ask for which events (None: all it has: a single shard)."""
    if event_id is not None:
        shard_id = placement.shard_of_event(event_id)
        return {} if shard_id is None else {shard_id: [event_id]}
    if len(placement.shards) == 1:
        return {next(iter(placement.shards)): None}
    by_shard: dict[int, list[int] | None] = {}
    for placed, shard_id in sorted(placement.events.items()):
        ids = by_shard.setdefault(shard_id, [])
        assert ids is not None
        ids.append(placed)
    return by_shard


async def _read_events(shards: ShardSet, shard_id: int,
                       ids: list[int] | None) -> tuple[list[Any], datetime]:
    async with shards.database(shard_id).connection() as conn:
        rows = await conn.fetch(queries("events")["events"], ids)
        now: datetime = await conn.fetchval("SELECT now()")
    return list(rows), now


async def _now(db: Database) -> datetime:
    async with db.connection() as conn:
        now: datetime = await conn.fetchval("SELECT now()")
    return now


# ---- holds ------------------------------------------------------------------


async def hold_document_on(conn: Any, hold_id: uuid.UUID,
                           account_id: uuid.UUID) -> dict[str, Any] | None:
    row = await conn.fetchrow(queries("holds")["get_hold"], hold_id, account_id)
    return None if row is None else hold_json(row)


async def hold_document(db: Database, hold_id: uuid.UUID,
                        account_id: uuid.UUID) -> dict[str, Any] | None:
    """``GET /api/holds/{hold_id}``'s document; None: no such hold of this account."""
    async with db.connection() as conn:
        return await hold_document_on(conn, hold_id, account_id)


# ---- orders -----------------------------------------------------------------


async def order_document(db: Database, order_id: uuid.UUID, account_id: uuid.UUID,
                         keys: KeyRing) -> dict[str, Any] | None:
    """``GET /api/orders/{order_id}``'s document, its tickets signed with ``keys``
    (:func:`ticket_keys`); None: no such order of this account."""
    async with db.connection() as conn:
        row = await conn.fetchrow(queries("payments")["order_for_account"], order_id,
                                  account_id)
    return None if row is None else order_json(row, keys)


# ---- an account's orders ---------------------------------------------------


def order_cursor(raw: str) -> Cursor | None:
    """A page's ``before``, the ``next_cursor`` of the page before it; None: not one."""
    return parse_cursor(raw)


def order_summary(row: Mapping[str, Any]) -> dict[str, Any]:
    """One order as the list shows it (its full document: ``GET /api/orders/{id}``)."""
    tickets = int(row["ticket_count"])
    return {
        "order_id": str(row["order_id"]),
        "event_id": row["event_id"],
        "event_name": row["event_name"],
        "venue_name": row["venue_name"],
        "event_time_zone": row["time_zone"],
        "event_starts_at": utc_iso(row["starts_at"]),
        "order_status": row["status"],
        "payment_status": row["payment_status"],
        "in_progress": in_progress(row["payment_status"], tickets),
        "amount_minor": row["amount_minor"],
        "currency": row["currency"],
        "seats": row["seats"],
        **({"ga": row["ga"]} if row["ga"] is not None else {}),
        "ticket_count": tickets,
        "created_at": utc_iso(row["created_at"]),
        "updated_at": utc_iso(row["updated_at"]),
    }


async def _shard_part(db: Database, account: uuid.UUID, before: Cursor | None,
                      limit: int) -> list[Any] | None:
    """This shard's newest ``limit + 1`` orders before the cursor; None: it did not
    answer (its breaker is open, or it failed)."""
    at, order_id = (before.created_at, before.order_id) if before else (None, None)
    try:
        async with db.connection() as conn:
            rows: list[Any] = await conn.fetch(queries("orders")["orders_of_account"],
                                               account, at, order_id, limit + 1)
    except Exception:  # one shard down: the others' orders are still shown
        log.warning("a shard did not answer an order list", exc_info=True)
        return None
    return rows


async def orders_page(pools: Mapping[int, Database], account: uuid.UUID,
                      before: Cursor | None, limit: int) -> dict[str, Any]:
    """A page of the account's orders: ``orders`` (newest first), ``next_cursor`` (None:
    the last page), and ``complete`` (False: a shard did not answer, so orders of its
    events are missing from this page)."""
    parts = await asyncio.gather(*(_shard_part(db, account, before, limit)
                                   for db in pools.values()))
    rows, after = newest_first([p for p in parts if p is not None], limit)
    if not any(p is not None for p in parts):
        raise Problem(503, "inventory_unavailable",
                      detail="Your orders cannot be read right now; try again in a moment.")
    return {"orders": [order_summary(r) for r in rows],
            "next_cursor": after.text() if after else None,
            "complete": all(p is not None for p in parts)}
