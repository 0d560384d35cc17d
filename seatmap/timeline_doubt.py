"""Whether the seat maps in Redis can go on after a failover (docs/seatmap.md#after-a-failover):
pure, over the published mark, the timelines and the server's timeline history.

The change capture reads its shard's primary. When Patroni promotes a standby, the
capture's slot goes on from Patroni's copy of it on the new primary, and the new
timeline shares the old one's WAL only up to its switch point: what the old primary had
flushed past that point (committed there, never replicated, so never acknowledged to a
shopper) is not on the new timeline, and a seat map that showed it would be wrong. So the
maps resume only when everything they show ended at or before the switch point; else
they are rebuilt from a snapshot and every client refetches.

``published`` is the end of the last record the maps show (a commit's end LSN, or a
message's LSN + 1): that record is on the new timeline exactly when ``published`` is at
or below the switch point.
"""

from __future__ import annotations

from onsale.seatmap.pgoutput import format_lsn, parse_lsn


def switch_points(history: str) -> dict[int, int]:
    """A timeline history file (``<parent tli>\\t<switch point>\\t<reason>`` per line,
    the ancestors of one timeline) as {parent timeline: the LSN where it ended}."""
    points: dict[int, int] = {}
    for line in history.splitlines():
        fields = line.strip().split("\t") if "\t" in line else line.split()
        if not fields or not fields[0] or fields[0].startswith("#"):
            continue
        if len(fields) < 2:
            raise ValueError(f"not a timeline history line: {line!r}")
        points[int(fields[0])] = parse_lsn(fields[1].strip())
    return points


def doubt(published: int, published_on: int, current: int, history: str | None) -> str | None:
    """Why the maps cannot go on from ``published`` (captured on timeline ``published_on``)
    on a primary at timeline ``current`` with that timeline's ``history``; None when they can."""
    if published_on == current:
        return None
    if published_on > current:
        return f"the maps come from timeline {published_on}, the primary is on {current}"
    if history is None:
        return f"no history for timeline {current}"
    ended = switch_points(history).get(published_on)
    if ended is None:
        return f"timeline {published_on} is not an ancestor of timeline {current}"
    if published > ended:
        return (f"failover: the maps show up to {format_lsn(published)} on timeline "
                f"{published_on}, which the new timeline {current} left at {format_lsn(ended)}")
    return None
