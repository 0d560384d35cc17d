"""Pure hold rules: request parsing, the idempotency digest, derived status.

No I/O here; core/holds.py feeds requests in and sends what comes out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from msgspec import UNSET, UnsetType

from onsale.core import request_bodies as bodies
from onsale.core.hold_state import HoldState
from onsale.kernel.bodies import convert
from onsale.kernel.problems import Problem


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


def parse_hold_request(body: Mapping[str, Any]) -> HoldRequest:
    """``hold_request`` of a body already parsed from JSON."""
    return hold_request(convert(body, bodies.HoldRequest, bodies.HOLD_CODES))


def hold_request(body: bodies.HoldRequest) -> HoldRequest:
    """A hold body its Struct has checked: ``{"seat_ids": [...]}``,
    ``{"best_available": {...}}`` or ``{"ga": {"tier_id": T, "quantity": Q}}``, exactly
    one, the seats distinct."""
    given = [v for v in (body.seat_ids, body.best_available, body.ga) if v is not UNSET]
    if len(given) != 1:
        raise Problem(400, "invalid_seats",
                      detail="Send exactly one of seat_ids, best_available or ga.")
    if not isinstance(body.seat_ids, UnsetType):
        ids = body.seat_ids
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise Problem(400, "invalid_seats", detail="A seat is listed more than once.",
                          duplicate_seat_ids=dupes)
        return SeatsRequest(tuple(sorted(ids)))
    if not isinstance(body.ga, UnsetType):
        return GARequest(body.ga.tier_id, body.ga.quantity)
    best = body.best_available
    assert not isinstance(best, UnsetType)
    return BestAvailableRequest(best.quantity, best.section, best.together)


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
