"""Pure hold rules: request parsing, the idempotency digest, derived status.

No I/O here; core/holds.py feeds requests in and sends what comes out.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from onsale.core.hold_state import HoldState
from onsale.kernel.problems import Problem

# A hard ceiling checked before the database is asked; the event's own
# max_seats_per_hold (default 6) is enforced inside the hold transaction.
HARD_MAX_SEATS = 100
MAX_SEAT_ID = 2**31 - 1


@dataclass(frozen=True)
class SeatsRequest:
    seat_ids: tuple[int, ...]  # sorted, distinct


@dataclass(frozen=True)
class BestAvailableRequest:
    quantity: int
    section: str | None
    together: bool


@dataclass(frozen=True)
class GARequest:
    """Places of a general-admission tier (docs/general-admission.md)."""

    tier_id: int
    quantity: int


HoldRequest = SeatsRequest | BestAvailableRequest | GARequest
MAX_GA_TIER_ID = 32_767  # smallint
_KINDS = ("seat_ids", "best_available", "ga")


def _invalid(detail: str, **extra: Any) -> Problem:
    return Problem(400, "invalid_seats", detail=detail, **extra)


def parse_hold_request(body: dict[str, Any]) -> HoldRequest:
    """Validate a hold body: ``{"seat_ids": [...]}``, ``{"best_available": {...}}`` or
    ``{"ga": {"tier_id": T, "quantity": Q}}``."""
    if sum(kind in body for kind in _KINDS) != 1:
        raise _invalid("Send exactly one of seat_ids, best_available or ga.")
    if "ga" in body:
        return _parse_ga(body["ga"])
    if "seat_ids" in body:
        ids = body["seat_ids"]
        if not isinstance(ids, list) or not ids:
            raise _invalid("seat_ids must be a non-empty list of seat ids.")
        if len(ids) > HARD_MAX_SEATS:
            raise _invalid(f"At most {HARD_MAX_SEATS} seats can be requested.")
        if not all(type(i) is int and 0 < i <= MAX_SEAT_ID for i in ids):
            raise _invalid("Seat ids are positive integers.")
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise _invalid("A seat is listed more than once.", duplicate_seat_ids=dupes)
        return SeatsRequest(tuple(sorted(ids)))
    best = body["best_available"]
    if not isinstance(best, dict):
        raise _invalid("best_available must be an object.")
    quantity = best.get("quantity")
    if type(quantity) is not int or not 1 <= quantity <= HARD_MAX_SEATS:
        raise _invalid("best_available.quantity must be a positive integer.")
    section = best.get("section")
    if section is not None and (not isinstance(section, str) or not 0 < len(section) <= 50):
        raise _invalid("best_available.section must be a section name.")
    together = best.get("together", False)
    if not isinstance(together, bool):
        raise _invalid("best_available.together must be true or false.")
    return BestAvailableRequest(quantity, section, together)


def _parse_ga(ga: Any) -> GARequest:
    if not isinstance(ga, dict) or set(ga) - {"tier_id", "quantity"}:
        raise Problem(400, "invalid_quantity", detail='ga is {"tier_id": T, "quantity": Q}.')
    tier_id, quantity = ga.get("tier_id"), ga.get("quantity")
    if type(tier_id) is not int or not 0 < tier_id <= MAX_GA_TIER_ID:
        raise Problem(400, "invalid_quantity", detail="ga.tier_id must be a GA tier's id.")
    if type(quantity) is not int or not 1 <= quantity <= HARD_MAX_SEATS:
        raise Problem(400, "invalid_quantity",
                      detail=f"ga.quantity must be an integer from 1 to {HARD_MAX_SEATS}.")
    return GARequest(tier_id, quantity)


def request_digest(route: str, scope: str, request: HoldRequest) -> str:
    """A digest of the canonical request: same meaning, same digest."""
    if isinstance(request, SeatsRequest):
        canonical: dict[str, Any] = {"seat_ids": list(request.seat_ids)}
    elif isinstance(request, GARequest):
        canonical = {"ga": {"tier_id": request.tier_id, "quantity": request.quantity}}
    else:
        canonical = {
            "best_available": {
                "quantity": request.quantity,
                "section": request.section,
                "together": request.together,
            }
        }
    doc = json.dumps({"route": route, "scope": scope, "body": canonical}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()


def effective_status(stored: str, expires_at: datetime, now: datetime) -> HoldState:
    """A HELD hold whose deadline has passed reads as EXPIRED before any sweep.

    The boundary matches the claim predicate: at ``now == expires_at`` the
    hold is over and its seats are claimable.
    """
    if stored == HoldState.HELD and expires_at <= now:
        return HoldState.EXPIRED
    return HoldState(stored)
