"""edge/fairness_sweep.py: axes, their product, the pre-queue window and the rows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from onsale.edge.fairness import FairnessInputError, parse_scenario, population, simulate, summarize
from onsale.edge.fairness_crowd import read_crowd
from onsale.edge.fairness_sweep import (
    cohort_rows,
    parse_axis,
    point_scenario,
    points,
    run_point,
    summary_rows,
    with_prequeue,
)


@pytest.mark.parametrize(("axis", "text", "values"), [
    ("policy", "fifo,random", ("fifo", "random")),
    ("rate_min", "60,120", (60.0, 120.0)),
    ("bot_devices", "1..4", (1, 2, 3, 4)),
    ("bot_share", "0..0.3/0.1", (0.0, 0.1, 0.2, 0.3)),
    ("prequeue", "0..900/300", (0, 300, 600, 900)),
    ("seats", "100", (100,)),
])
def test_axes_are_lists_or_ranges(axis: str, text: str, values: tuple[object, ...]) -> None:
    assert parse_axis(axis, text) == values


@pytest.mark.parametrize(("axis", "text"), [
    ("policy", "lottery"), ("colour", "1"), ("bot_devices", "1.5"), ("seats", "many"),
    ("bot_devices", "5..1"), ("bot_share", "0..1/0"), ("bot_devices", "1..100000"),
])
def test_bad_axes_are_refused(axis: str, text: str) -> None:
    with pytest.raises(FairnessInputError):
        parse_axis(axis, text)


def test_the_product_varies_the_last_axis_fastest() -> None:
    assert points({"policy": ("fifo", "random"), "bot_devices": (1, 2)}) == [
        {"policy": "fifo", "bot_devices": 1}, {"policy": "fifo", "bot_devices": 2},
        {"policy": "random", "bot_devices": 1}, {"policy": "random", "bot_devices": 2}]
    with pytest.raises(FairnessInputError):
        points({"seats": tuple(range(1, 200)), "bot_devices": tuple(range(1, 60))})


def test_a_prequeue_window_moves_earlier_arrivals_to_its_start() -> None:
    sc = parse_scenario({"arrivals": [3, 1, 2, 5, 4], "onsale_second": 4, "seats": 5})
    assert with_prequeue(sc, 2).arrivals == (0, 0, 6, 5, 4)
    assert with_prequeue(sc, 10).arrivals == sc.arrivals
    crowd = read_crowd("at,account\n0,a\n1,b\n3,c\n3,a\n")
    moved = with_prequeue(replace(sc, arrivals=crowd.arrivals(), crowd=crowd), 2)
    assert moved.crowd is not None
    assert [v.joins for v in moved.crowd.visitors] == [(2, 3), (2,), (3,)]


def test_a_point_is_the_simulators_own_figures() -> None:
    base = {"preset": "spike", "visitors": 3000, "seconds": 600, "onsale_second": 300,
            "seats": 400, "seed": 3}
    result = run_point(base, None, {"policy": "random", "bot_share": 0.2, "bot_devices": 4})
    sc = point_scenario(base, None, {"bot_share": 0.2, "bot_devices": 4})
    pop = population(sc)
    assert result["policies"] == {"random": summarize(sc, pop, simulate(sc, pop, "random"))}
    (row,) = summary_rows([result])
    own = result["policies"]["random"]
    assert row["bot_ticket_share"] == own["bots"]["seat_share"]
    assert row["humans_served_share"] == own["humans"]["with_seats_share"]
    assert (row["bot_share"], row["bot_devices"], row["policy"]) == (0.2, 4, "random")
    cohorts = cohort_rows([result])
    assert len(cohorts) == len(own["cohorts"])
    assert cohorts[0]["wait_p50"] == own["cohorts"][0]["wait_p50"]


def test_without_a_policy_axis_both_policies_run() -> None:
    result = run_point({"preset": "flat", "visitors": 100, "seconds": 60, "seats": 10}, None,
                       {})
    assert set(result["policies"]) == {"fifo", "random"}


def test_a_point_out_of_bounds_is_refused_like_the_lab_request() -> None:
    with pytest.raises(FairnessInputError) as info:
        run_point({"preset": "flat"}, None, {"bot_devices": 99})
    assert info.value.field == "bot_devices"
