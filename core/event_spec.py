"""Pure validation of an event creation request (operators, tests, the demo)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from onsale.core.layout import DEFAULT_TIERS
from onsale.kernel.problems import Problem

MAX_SEATS = 500_000
# Prices are paid through a card provider: at least one minor unit (free
# tickets are not sold through checkout), and at most what a provider
# accepts for six seats (Stripe-like providers cap one charge at 99,999,999).
MAX_PRICE_MINOR = 99_999_999 // 6
QUEUE_POLICIES = ("fifo", "random", "passthrough")
MAX_RATE = 1_000_000
MAX_CAP = 10_000_000


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


MAX_GA_TIERS = 10
MAX_GA_CAPACITY = 1_000_000
MAX_STRIPES = 64


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
    tiers: tuple[tuple[str, int], ...]
    queue: QueueSpec = QueueSpec()
    ga_tiers: tuple[GATierSpec, ...] = ()
    shard: int | None = None  # None: the active shard with the fewest events on sale


def _bad(detail: str) -> Problem:
    return Problem(400, "invalid_request", detail=detail)


def _int(body: dict[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    value = body.get(name, default)
    if type(value) is not int or not lo <= value <= hi:
        raise _bad(f"{name} must be an integer from {lo} to {hi}.")
    return value


def _time(body: dict[str, Any], name: str, default: datetime) -> datetime:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _bad(f"{name} must be an ISO 8601 time.")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _bad(f"{name} must be an ISO 8601 time.") from None
    if parsed.tzinfo is None:
        raise _bad(f"{name} must include a time zone (for example 'Z').")
    return parsed


def parse_event_spec(
    body: dict[str, Any], *, default_ttl: int, default_limit: int, default_max_hold: int,
    now: datetime | None = None,
) -> EventSpec:
    now = now or datetime.now(UTC)
    name = body.get("name")
    if not isinstance(name, str) or not 1 <= len(name.strip()) <= 200:
        raise _bad("name must be 1 to 200 characters.")
    venue = body.get("venue_name", "Main Arena")
    if not isinstance(venue, str) or not 1 <= len(venue.strip()) <= 200:
        raise _bad("venue_name must be 1 to 200 characters.")
    currency = body.get("currency", "USD")
    if (not isinstance(currency, str) or len(currency) != 3
            or not (currency.isascii() and currency.isalpha())):
        raise _bad("currency must be a three-letter ISO 4217 code.")
    raw_tiers = body.get("price_tiers")
    if raw_tiers is None:
        tiers = DEFAULT_TIERS
    else:
        if not isinstance(raw_tiers, list) or not 1 <= len(raw_tiers) <= 10:
            raise _bad("price_tiers must be a list of 1 to 10 tiers.")
        parsed: list[tuple[str, int]] = []
        for tier in raw_tiers:
            if (not isinstance(tier, dict) or not isinstance(tier.get("name"), str)
                    or not 1 <= len(tier["name"].strip()) <= 50
                    or type(tier.get("price_minor")) is not int
                    or not 1 <= tier["price_minor"] <= MAX_PRICE_MINOR):
                raise _bad("each price tier is {name, price_minor} with a 1-50 character name"
                           f" and 1 <= price_minor <= {MAX_PRICE_MINOR}.")
            parsed.append((tier["name"].strip(), tier["price_minor"]))
        tiers = tuple(parsed)
    onsale_at = _time(body, "onsale_at", now)
    starts_at = _time(body, "starts_at", onsale_at + timedelta(days=30))
    ga_tiers = parse_ga_tiers(body.get("ga_tiers"), default_max_hold)
    return EventSpec(
        name=name.strip(),
        # General admission only: no seats at all.
        seats=_int(body, "seats", 50_000, 0 if ga_tiers else 1, MAX_SEATS),
        hold_ttl_seconds=_int(body, "hold_ttl_seconds", default_ttl, 1, 3600),
        max_tickets_per_account=_int(body, "max_tickets_per_account", default_limit, 1, 100),
        max_seats_per_hold=_int(body, "max_seats_per_hold", default_max_hold, 1, 100),
        onsale_at=onsale_at,
        starts_at=starts_at,
        venue_name=venue.strip(),
        currency=currency.upper(),
        tiers=tiers,
        queue=parse_queue_spec(body, QueueSpec(), onsale_at),
        ga_tiers=ga_tiers,
        shard=parse_shard(body),
    )


def parse_shard(body: dict[str, Any]) -> int | None:
    """``shard``: where the event goes (docs/scaling.md#placing-an-event); whether that
    shard is listed and active is the directory's to say."""
    value = body.get("shard")
    if value is not None and (type(value) is not int or not 1 <= value <= 32767):
        raise _bad("shard must be an integer from 1 to 32767.")
    return value


def parse_ga_tiers(raw: Any, default_max_hold: int) -> tuple[GATierSpec, ...]:
    """``ga_tiers``: ``[{"name", "price_minor", "capacity", "stripes", "max_per_hold",
    "max_per_account"}]``; the last three optional."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_GA_TIERS:
        raise _bad(f"ga_tiers must be a list of 1 to {MAX_GA_TIERS} tiers.")
    tiers: list[GATierSpec] = []
    for tier in raw:
        if not isinstance(tier, dict):
            raise _bad("each GA tier is an object.")
        unknown = set(tier) - {"name", "price_minor", "capacity", "stripes", "max_per_hold",
                               "max_per_account"}
        if unknown:
            raise _bad(f"unknown GA tier field(s): {', '.join(sorted(unknown))}.")
        name = tier.get("name")
        if not isinstance(name, str) or not 1 <= len(name.strip()) <= 50:
            raise _bad("a GA tier's name must be 1 to 50 characters.")
        limit = tier.get("max_per_account")
        if limit is not None and (type(limit) is not int or not 1 <= limit <= 100):
            raise _bad("a GA tier's max_per_account must be an integer from 1 to 100.")
        tiers.append(GATierSpec(
            name=name.strip(),
            price_minor=_int(tier, "price_minor", 0, 1, MAX_PRICE_MINOR),
            capacity=_int(tier, "capacity", 0, 1, MAX_GA_CAPACITY),
            stripes=_int(tier, "stripes", 1, 1, MAX_STRIPES),
            max_per_hold=_int(tier, "max_per_hold", min(default_max_hold, 100), 1, 100),
            max_per_account=limit,
        ))
    if len({t.name for t in tiers}) != len(tiers):
        raise _bad("GA tier names must be distinct.")
    return tuple(tiers)


def parse_queue_spec(body: dict[str, Any], current: QueueSpec, onsale_at: datetime) -> QueueSpec:
    """The waiting-room fields of ``body`` over ``current`` (creation: the
    defaults; an operator update: the event's settings)."""
    policy = body.get("queue_policy", current.policy)
    if policy not in QUEUE_POLICIES:
        raise _bad(f"queue_policy must be one of {', '.join(QUEUE_POLICIES)}.")
    prequeue_at = current.prequeue_at
    if body.get("prequeue_at") is not None:
        prequeue_at = _time(body, "prequeue_at", onsale_at)
    if prequeue_at is not None and prequeue_at > onsale_at:
        raise _bad("prequeue_at must not be after onsale_at.")
    rate_min = _int(body, "admission_rate_min", current.admission_rate_min, 1, MAX_RATE)
    rate_max = _int(body, "admission_rate_max", current.admission_rate_max, 1, MAX_RATE)
    if rate_min > rate_max:
        raise _bad("admission_rate_min must not exceed admission_rate_max.")
    return QueueSpec(
        policy=policy,
        prequeue_at=prequeue_at,
        admission_rate_min=rate_min,
        admission_rate_max=rate_max,
        active_cap=_int(body, "active_cap", current.active_cap, 1, MAX_CAP),
        pow_difficulty=_int(body, "pow_difficulty", current.pow_difficulty, 0, 32),
    )
