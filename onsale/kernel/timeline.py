"""Which PostgreSQL node a process may use (docs/design.md#failover): the primary, on the
highest timeline this process has seen for that address. A shard's nodes share one
address (HAProxy routes it to Patroni's leader); a promotion starts a new timeline, so a
connection that lands on a demoted or frozen old primary, or on a standby, is refused
before any statement runs on it. Pure decisions; ``kernel/db.py`` asks on each new
connection."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Verdict(Enum):
    USE = "use"
    STANDBY = "standby"  # in recovery: read-only, and maybe behind
    STALE = "stale"  # a lower timeline than one already seen: a deposed primary


class NotThePrimary(ConnectionError):
    """A connection reached a node that is not the shard's current primary (an OSError:
    the pool's callers treat it as an outage, 503 ``inventory_unavailable``)."""


def judge(highest: int, standby: bool, timeline: int | None) -> Verdict:
    """``highest``: the highest timeline seen at this address (0: none yet)."""
    if standby or timeline is None:
        return Verdict.STANDBY
    if timeline < highest:
        return Verdict.STALE
    return Verdict.USE


# One round trip: whether the node is in recovery, and the timeline of the WAL it writes
# (the first 8 hex digits of the current WAL file's name). pg_control_checkpoint() would
# lag a promotion until the next checkpoint.
QUERY = """SELECT pg_is_in_recovery() AS standby,
       CASE WHEN NOT pg_is_in_recovery() THEN
           ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int
       END AS timeline"""


@dataclass
class Timelines:
    """The highest timeline seen per address, for one process."""

    seen: dict[str, int] = field(default_factory=dict)

    def admit(self, address: str, standby: bool, timeline: int | None) -> int:
        """The timeline to use this connection on; raises NotThePrimary otherwise."""
        highest = self.seen.get(address, 0)
        verdict = judge(highest, standby, timeline)
        if verdict is Verdict.STANDBY:
            raise NotThePrimary(f"{address} reached a standby (in recovery), not the primary")
        if verdict is Verdict.STALE:
            raise NotThePrimary(f"{address} reached a node on timeline {timeline}, below "
                                f"the {highest} already seen: a deposed primary")
        assert timeline is not None
        self.seen[address] = timeline
        return timeline

    def highest(self, address: str) -> int:
        return self.seen.get(address, 0)
