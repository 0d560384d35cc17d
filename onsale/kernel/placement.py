"""Where an event's inventory lives, and which shard made an id
(docs/scaling.md#routing): the directory's shard list and event placement, as a
plain value each process caches. Pure: ``core.shard_directory`` reads it."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from onsale.kernel.shard_ids import Stamping, shard_of


@dataclass(frozen=True)
class ShardRow:
    """One row of the directory's shard list. ``dsn`` '' is the directory's own
    database."""

    shard_id: int
    dsn: str
    state: str = "active"
    epoch: int = 1
    stamped_since_ms: int = 0


@dataclass(frozen=True)
class Placement:
    shards: Mapping[int, ShardRow]
    events: Mapping[int, int] = field(default_factory=dict)  # event id -> shard id

    def shard_of_event(self, event_id: int) -> int | None:
        """The event's shard; with one shard, every event is its (even one created
        before placements were recorded); None: no such event."""
        found = self.events.get(event_id)
        if found is None and len(self.shards) == 1:
            return next(iter(self.shards))
        return found

    def shard_of_id(self, value: uuid.UUID) -> int | None:
        """The shard that made a hold, order, payment operation or ticket id; None
        when no listed shard did (the caller answers not found)."""
        first = self.shards.get(1)
        stamping = Stamping(1, first.stamped_since_ms if first is not None else 0)
        found = shard_of(value, stamping)
        return found if found in self.shards else None

    def with_event(self, event_id: int, shard_id: int) -> Placement:
        return Placement(self.shards, {**self.events, event_id: shard_id})


def choose_shard(shards: Mapping[int, ShardRow], on_sale: Mapping[int, int]) -> int:
    """The default home of a new event: the active shard with the fewest events on
    sale (``on_sale``: shard id -> count), the lowest number on a tie."""
    active = sorted(s for s, row in shards.items() if row.state == "active")
    if not active:
        raise ValueError("no active shard")
    return min(active, key=lambda s: (on_sale.get(s, 0), s))


def shard_refusal(shards: Mapping[int, ShardRow], shard_id: int) -> str | None:
    """Why a new or moved event may not go to ``shard_id``: ``shard_not_found`` (not
    listed) or ``shard_not_active`` (retired); None when it may."""
    row = shards.get(shard_id)
    if row is None:
        return "shard_not_found"
    return None if row.state == "active" else "shard_not_active"


@dataclass(frozen=True)
class Home:
    """Where a new event goes: a shard, or why it cannot go where it was asked to
    (``refusal``, a stable problem code)."""

    shard_id: int | None
    refusal: str | None = None


def home_of_new_event(shards: Mapping[int, ShardRow], on_sale: Mapping[int, int],
                      requested: int | None) -> Home:
    """The shard asked for, if it is listed and active; else, when none was asked for,
    ``choose_shard``'s."""
    if requested is not None:
        refusal = shard_refusal(shards, requested)
        return Home(None, refusal) if refusal else Home(requested)
    try:
        return Home(choose_shard(shards, on_sale))
    except ValueError:
        return Home(None, "shard_not_active")


def masked_dsn(dsn: str) -> str:
    """A DSN fit to print: its password replaced by ``***``."""
    if not dsn:
        return "(the directory's database)"
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return "(unparsable dsn)"
    if parts.password is None:
        return dsn
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
