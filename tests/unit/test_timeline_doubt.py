"""After a failover the seat maps go on only if the new timeline holds all they show."""

from __future__ import annotations

import pytest

from onsale.seatmap.timeline_doubt import doubt, switch_points

# What PostgreSQL 18 writes as 00000003.history after two promotions.
HISTORY_3 = ("1\t0/3000158\tno recovery target specified\n\n"
             "2\t0/5A0010E8\tno recovery target specified\n")


def test_a_history_file_reads_as_the_lsn_each_ancestor_ended_at() -> None:
    assert switch_points(HISTORY_3) == {1: 0x3000158, 2: 0x5A0010E8}
    assert switch_points("") == {}


def test_a_malformed_history_line_is_refused() -> None:
    with pytest.raises(ValueError):
        switch_points("1\n")
    with pytest.raises(ValueError):
        switch_points("1\tnot-an-lsn\treason\n")


def test_the_same_timeline_goes_on_whatever_the_position() -> None:
    assert doubt(0xFFFF_FFFF, 2, 2, None) is None


def test_maps_that_end_at_or_before_the_switch_point_go_on() -> None:
    assert doubt(0x5A0010E8, 2, 3, HISTORY_3) is None  # the last commit ended exactly there
    assert doubt(0x5A0010E7, 2, 3, HISTORY_3) is None
    assert doubt(0x3000158, 1, 3, HISTORY_3) is None  # two failovers while it was away


def test_maps_that_show_a_record_past_the_switch_point_are_rebuilt() -> None:
    reason = doubt(0x5A0010E9, 2, 3, HISTORY_3)
    assert reason is not None and "0/5A0010E9" in reason and "0/5A0010E8" in reason
    assert doubt(0x3000159, 1, 3, HISTORY_3) is not None


def test_a_timeline_the_history_does_not_name_or_a_newer_one_is_in_doubt() -> None:
    assert doubt(1, 4, 3, HISTORY_3) is not None  # maps from a newer timeline
    assert doubt(1, 2, 5, "3\t0/6000000\treason\n") is not None  # not an ancestor
    assert doubt(1, 1, 2, None) is not None  # no history to compare with
