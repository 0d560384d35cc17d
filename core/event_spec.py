"""Pure validation of an event creation request (operators, tests, the demo): the
``NewEvent`` Struct checks each field (core/request_bodies.py), this module what
relates them and the defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from msgspec import UnsetType

from onsale.core import request_bodies as bodies
from onsale.core.layout import DEFAULT_TIERS
from onsale.core.request_bodies import (
    MAX_GA_CAPACITY,
    MAX_GA_TIERS,
    MAX_PRICE_MINOR,
    MAX_SEATS,
    MAX_STRIPES,
)
from onsale.kernel.bodies import convert
from onsale.kernel.problems import Problem
from onsale.kernel.venue_time import DEFAULT_ZONE, zone_of

T = TypeVar("T")
__all__ = ["MAX_GA_CAPACITY", "MAX_GA_TIERS", "MAX_PRICE_MINOR", "MAX_SEATS", "MAX_STRIPES",
           "EventSpec", "GATierSpec", "QueueSpec", "event_spec", "parse_event_spec",
           "parse_ga_tiers", "parse_queue_spec", "queue_spec"]


@dataclass(frozen=True)
class QueueSpec:
    """The waiting room of an event (docs/edge.md). ``prequeue_at`` None: the
    queue takes visitors as soon as the event exists. Rates are new shoppers
    per minute; the controller moves between the two."""

    policy: str = "fifo"
    prequeue_at: datetime | None = None
    admission_rate_min: int = 60
    admission_rate_max: int = 6000
    active_cap: int = 10_000
    pow_difficulty: int = 0


@dataclass(frozen=True)
class GATierSpec:
    """A general-admission tier: places sold by quantity from ``stripes`` counter rows
    (docs/general-admission.md). ``max_per_account`` None: the event's ticket limit."""

    name: str
    price_minor: int
    capacity: int
    stripes: int = 1
    max_per_hold: int = 6
    max_per_account: int | None = None


@dataclass(frozen=True)
class EventSpec:
    name: str
    seats: int
    hold_ttl_seconds: int
    max_tickets_per_account: int
    max_seats_per_hold: int
    onsale_at: datetime
    starts_at: datetime
    venue_name: str
    currency: str
    time_zone: str
    tiers: tuple[tuple[str, int], ...]
    queue: QueueSpec = QueueSpec()
    ga_tiers: tuple[GATierSpec, ...] = ()
    shard: int | None = None  # None: the active shard with the fewest events on sale


def _bad(detail: str) -> Problem:
    return Problem(400, "invalid_request", detail=detail)


def parse_event_spec(
    body: Mapping[str, Any], *, default_ttl: int, default_limit: int, default_max_hold: int,
    now: datetime | None = None,
) -> EventSpec:
    """``event_spec`` of a body already parsed from JSON (the CLI's, the tests')."""
    return event_spec(convert(body, bodies.NewEvent, bodies.EVENT_CODES),
                      default_ttl=default_ttl, default_limit=default_limit,
                      default_max_hold=default_max_hold, now=now)


def _or(value: T | UnsetType, default: T) -> T:
    return default if isinstance(value, UnsetType) else value


def _checked_defaults(ttl: int, limit: int, max_hold: int) -> None:
    """The server's defaults (settings) within the bounds a request's values have."""
    convert({"name": "defaults", "hold_ttl_seconds": ttl, "max_tickets_per_account": limit,
             "max_seats_per_hold": max_hold}, bodies.NewEvent, bodies.EVENT_CODES)


def event_spec(
    body: bodies.NewEvent, *, default_ttl: int, default_limit: int, default_max_hold: int,
    now: datetime | None = None,
) -> EventSpec:
    """The event a checked ``NewEvent`` asks for, its defaults filled in."""
    _checked_defaults(default_ttl, default_limit, default_max_hold)
    now = now or datetime.now(UTC)
    tiers = (DEFAULT_TIERS if body.price_tiers is None
             else tuple((t.name.strip(), t.price_minor) for t in body.price_tiers))
    onsale_at = body.onsale_at or now
    starts_at = body.starts_at or onsale_at + timedelta(days=30)
    ga_tiers = parse_ga_tiers(body.ga_tiers, default_max_hold)
    seats = _or(body.seats, 50_000)
    time_zone = _or(body.time_zone, DEFAULT_ZONE)
    if zone_of(time_zone) is None:
        raise _bad(f"time_zone: {time_zone!r} is not an IANA time zone "
                   "(such as Europe/Berlin or America/New_York).")
    if seats == 0 and not ga_tiers:  # general admission only: no seats at all
        raise _bad("seats: expected `int` >= 1 (0 only for an event with ga_tiers).")
    return EventSpec(
        name=body.name.strip(),
        seats=seats,
        hold_ttl_seconds=_or(body.hold_ttl_seconds, default_ttl),
        max_tickets_per_account=_or(body.max_tickets_per_account, default_limit),
        max_seats_per_hold=_or(body.max_seats_per_hold, default_max_hold),
        onsale_at=onsale_at,
        starts_at=starts_at,
        venue_name=_or(body.venue_name, "Main Arena").strip(),
        currency=_or(body.currency, "USD").upper(),
        time_zone=time_zone,
        tiers=tiers,
        queue=queue_spec(body, QueueSpec(), onsale_at),
        ga_tiers=ga_tiers,
        shard=body.shard,
    )


def parse_ga_tiers(raw: list[bodies.GATierRequest] | None,
                   default_max_hold: int) -> tuple[GATierSpec, ...]:
    """``ga_tiers``, checked: the names distinct, ``max_per_hold`` defaulting to the
    event's ``max_seats_per_hold`` (at most 100)."""
    if raw is None:
        return ()
    tiers = tuple(GATierSpec(
        name=t.name.strip(), price_minor=t.price_minor, capacity=t.capacity,
        stripes=t.stripes, max_per_hold=_or(t.max_per_hold, min(default_max_hold, 100)),
        max_per_account=t.max_per_account) for t in raw)
    if len({t.name for t in tiers}) != len(tiers):
        raise _bad("GA tier names must be distinct.")
    return tiers


def parse_queue_spec(body: Mapping[str, Any], current: QueueSpec,
                     onsale_at: datetime) -> QueueSpec:
    """``queue_spec`` of a body already parsed from JSON."""
    return queue_spec(convert(body, bodies.QueueSettings, bodies.QUEUE_SETTINGS_CODES),
                      current, onsale_at)


def queue_spec(body: bodies.QueueSettings, current: QueueSpec,
               onsale_at: datetime) -> QueueSpec:
    """The waiting-room fields of ``body`` over ``current`` (creation: the
    defaults; an operator update: the event's settings)."""
    prequeue_at = body.prequeue_at or current.prequeue_at
    if prequeue_at is not None and prequeue_at > onsale_at:
        raise _bad("prequeue_at must not be after onsale_at.")
    rate_min = _or(body.admission_rate_min, current.admission_rate_min)
    rate_max = _or(body.admission_rate_max, current.admission_rate_max)
    if rate_min > rate_max:
        raise _bad("admission_rate_min must not exceed admission_rate_max.")
    return QueueSpec(
        policy=_or(body.queue_policy, current.policy),
        prequeue_at=prequeue_at,
        admission_rate_min=rate_min,
        admission_rate_max=rate_max,
        active_cap=_or(body.active_cap, current.active_cap),
        pow_difficulty=_or(body.pow_difficulty, current.pow_difficulty),
    )
