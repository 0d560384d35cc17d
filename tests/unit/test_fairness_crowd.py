"""edge/fairness_crowd.py: a CSV of join times read into the lab's visitors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from onsale.edge.fairness import compare, parse_scenario, population
from onsale.edge.fairness_crowd import Crowd, CrowdError, Visitor, crowd_csv, read_crowd

CSV = """at,account,device,bot
1767261600.5,alice,phone,
1767261601.9,bob,laptop,false
2026-01-01T10:00:03Z,carol,pc,true
1767261604.0,carol,pc2,true
1767261602.2,alice,laptop,
"""


def test_rows_of_one_account_are_one_visitor_with_its_devices() -> None:
    crowd = read_crowd(CSV)
    assert crowd.start == 1767261600
    assert crowd.visitors == (Visitor((0, 2)), Visitor((1,), False), Visitor((3, 4), True))
    assert crowd.arrivals() == (1, 1, 0, 1, 0)


def test_without_accounts_each_row_is_a_visitor() -> None:
    crowd = read_crowd("at\n10\n10.5\n12\n")
    assert [v.joins for v in crowd.visitors] == [(0,), (0,), (2,)]
    assert all(v.bot is None for v in crowd.visitors)


def test_the_opening_on_the_crowds_clock() -> None:
    crowd = read_crowd("at\n100\n160\n")
    assert crowd.opening_second(130) == 30
    assert crowd.opening_second(50) == 0
    assert crowd.shifted(50).visitors[1].joins == (110,)


@pytest.mark.parametrize(("text", "line", "says"), [
    ("when\n1\n", 1, "'at'"),
    ("at\nsoon\n", 2, "neither ISO 8601"),
    ("at\n2026-01-01T10:00:00\n", 2, "no time zone"),
    ("at,bot\n1,perhaps\n", 2, "bot is 'perhaps'"),
    ("at,account,bot\n1,x,true\n2,x,false\n", 3, "both bot and not"),
    ("at\n", 0, "no rows"),
])
def test_a_bad_csv_says_which_line(text: str, line: int, says: str) -> None:
    with pytest.raises(CrowdError) as info:
        read_crowd(text)
    assert info.value.line == line
    assert says in str(info.value)


def test_the_export_format_reads_back() -> None:
    text = crowd_csv([(1000.25, "a1", "d1"), (1001.0, "a2", ""), (1003.0, "a1", "d2")])
    assert text.splitlines()[0] == "at,account,device"
    assert read_crowd(text).visitors == (Visitor((0, 3)), Visitor((1,)))


def _crowd_scenario(crowd: Crowd, **settings: object) -> object:
    sc = parse_scenario({"arrivals": list(crowd.arrivals()), "onsale_second": 2,
                         "seats": 10, **settings})
    return replace(sc, crowd=crowd)


def test_known_bots_stay_bots_and_unknown_ones_follow_the_share() -> None:
    crowd = read_crowd(CSV)
    pop = population(_crowd_scenario(crowd))  # type: ignore[arg-type]
    assert pop.is_bot == [False, False, True]
    everyone = population(_crowd_scenario(crowd, bot_share=1.0))  # type: ignore[arg-type]
    assert everyone.is_bot == [True, False, True]  # bob is known not to be one


def test_one_place_per_account_or_one_per_device() -> None:
    crowd = read_crowd(CSV)
    one = population(_crowd_scenario(crowd))  # type: ignore[arg-type]
    assert (one.arrival, one.owner) == ([0, 1, 3], [0, 1, 2])
    each = population(_crowd_scenario(crowd, dedupe_accounts=False))  # type: ignore[arg-type]
    assert (each.arrival, each.owner) == ([0, 2, 1, 3, 4], [0, 0, 1, 2, 2])
    # a bot with fewer devices than bot_devices gets more, with its first join
    more = population(_crowd_scenario(crowd, dedupe_accounts=False,  # type: ignore[arg-type]
                                      bot_devices=4))
    assert more.arrival[-4:] == [3, 4, 3, 3] and more.owner.count(2) == 4


def test_the_lab_runs_on_a_crowd_as_on_counts() -> None:
    doc = compare(_crowd_scenario(read_crowd(CSV)))  # type: ignore[arg-type]
    assert doc["scenario"]["people"] == 3
    for result in doc["policies"].values():
        assert result["totals"]["people"] == 3 and result["totals"]["bots"] == 1
