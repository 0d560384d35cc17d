"""Which node a process may use after a failover (onsale/kernel/timeline.py)."""

from __future__ import annotations

import pytest

from onsale.kernel.timeline import NotThePrimary, Timelines, Verdict, judge


@pytest.mark.parametrize(("highest", "standby", "timeline", "verdict"), [
    (0, False, 1, Verdict.USE),  # the first connection: whatever the primary's timeline
    (3, False, 3, Verdict.USE),
    (3, False, 4, Verdict.USE),  # a promotion since: the new primary
    (3, False, 2, Verdict.STALE),  # a deposed primary, still writable
    (3, True, None, Verdict.STANDBY),
    (0, True, None, Verdict.STANDBY),
    (3, False, None, Verdict.STANDBY),  # no timeline read: never trusted
])
def test_judge(highest: int, standby: bool, timeline: int | None, verdict: Verdict) -> None:
    assert judge(highest, standby, timeline) is verdict


def test_the_highest_timeline_seen_only_rises_and_fences_older_nodes() -> None:
    seen = Timelines()
    assert seen.admit("a", False, 2) == 2
    assert seen.admit("a", False, 3) == 3
    with pytest.raises(NotThePrimary, match="timeline 2, below the 3"):
        seen.admit("a", False, 2)
    assert seen.highest("a") == 3
    assert seen.admit("b", False, 1) == 1  # another address keeps its own
    with pytest.raises(NotThePrimary, match="standby"):
        seen.admit("a", True, None)
    assert seen.highest("a") == 3


def test_a_refused_node_is_an_outage_for_the_pools_callers() -> None:
    assert issubclass(NotThePrimary, OSError)  # kernel/db.py UNAVAILABLE: a 503, counted
