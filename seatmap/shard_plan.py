"""Which change-capture consumers a process runs, one per shard (docs/seatmap.md#one-
consumer-per-shard): pure decisions over the directory's shard list and placement, so
the supervisor (seatmap/capture.py) only starts and stops what they say.

- Every shard that is not retired gets a consumer, on its own slot. A slot name is
  unique per PostgreSQL server, and two shards may be two databases of one server, so
  shard n's slot is the configured name with ``_s<n>``; shard 1 keeps the name itself,
  so a deployment from before shards keeps its slot and its seat maps.
- A consumer follows its shard's DSN and epoch: a new DSN or a raised epoch (a
  failover) is a new consumer.
- A consumer publishes the events of its shard and the events the directory has not
  placed yet (a new event's rows can reach the slot before its placement reaches this
  process); it skips an event placed on another shard (a moved event's old rows, or
  a copy before the switch). An event that moves onto a shard makes that shard's
  consumer rebuild: its seat map then starts from the new shard's rows and LSNs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from onsale.kernel.placement import Placement, ShardRow

SLOT_MAX = 63  # PostgreSQL's identifier length


def slot_name(base: str, shard_id: int) -> str:
    """The slot of ``shard_id``'s consumer: ``base`` for shard 1, ``base_s<n>`` for the
    others (``base`` shortened so the name stays a valid identifier)."""
    if shard_id == 1:
        return base
    suffix = f"_s{shard_id}"
    return base[:SLOT_MAX - len(suffix)] + suffix


@dataclass(frozen=True)
class Target:
    """One consumer as the directory describes it."""

    shard_id: int
    dsn: str              # the database it streams from (shard 1: DATABASE_URL)
    replication_dsn: str  # the connection that reads the slot
    epoch: int


def capturing(shards: Mapping[int, ShardRow],
              only: frozenset[int] | None = None) -> list[int]:
    """The shards whose changes are captured: every one not retired, of ``only``
    (ONSALE_SEATMAP_SHARDS) when a process is given some."""
    return sorted(s for s, row in shards.items()
                  if row.state != "retired" and (only is None or s in only))


def targets(shards: Mapping[int, ShardRow], directory_url: str,
            replication_url: str | None,
            only: frozenset[int] | None = None) -> dict[int, Target]:
    """A consumer per captured shard. ``replication_url`` (ONSALE_SEATMAP_REPLICATION_URL)
    overrides shard 1's replication connection only; shard n's is its DSN, whose role
    must be allowed to replicate (docs/seatmap.md#one-consumer-per-shard)."""
    out = {}
    for shard_id in capturing(shards, only):
        row = shards[shard_id]
        dsn = row.dsn or directory_url
        repl = (replication_url or dsn) if not row.dsn else dsn
        out[shard_id] = Target(shard_id, dsn, repl, row.epoch)
    return out


@dataclass(frozen=True)
class Plan:
    start: tuple[Target, ...]
    stop: tuple[int, ...]
    # shard -> the events that moved onto it: its consumer rebuilds.
    rebuild: Mapping[int, tuple[int, ...]]


def plan(running: Mapping[int, Target], wanted: Mapping[int, Target],
         before: Placement | None, after: Placement) -> Plan:
    """What to stop, start and rebuild to go from ``running`` to ``wanted``, the
    placement having gone from ``before`` (None: the first reading) to ``after``."""
    stop = tuple(sorted(s for s, t in running.items() if wanted.get(s) != t))
    start = tuple(t for s, t in sorted(wanted.items()) if running.get(s) != t)
    moved: dict[int, list[int]] = {}
    if before is not None:
        for event_id, shard_id in sorted(after.events.items()):
            was = before.events.get(event_id)
            if was is not None and was != shard_id and shard_id in wanted:
                moved.setdefault(shard_id, []).append(event_id)
    return Plan(start, stop, {s: tuple(e) for s, e in moved.items()})


def foreign(event_id: int, shard_id: int, placement: Placement) -> bool:
    """The event is placed on another shard: this shard's consumer does not publish it."""
    placed = placement.events.get(event_id)
    return placed is not None and placed != shard_id
