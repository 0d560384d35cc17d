"""edge/fairness.py: the fairness lab's simulator, with literal scenarios."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from onsale.edge.fairness import (
    MAX_VISITORS,
    FairnessInputError,
    Scenario,
    compare,
    parse_scenario,
    population,
    preset_arrivals,
    simulate,
    wait_after_opening,
)


def crowd(**overrides: object) -> Scenario:
    """600 s of pre-queue, 50 arrivals a second, then 600 s of 10 a second."""
    base = Scenario(arrivals=tuple([50] * 600 + [10] * 600), onsale_second=600, seats=8_000,
                    tickets_per_account=2, tickets_per_human=2, rate_min=600, rate_max=600,
                    active_cap=100_000, session_seconds=60, seed=7)
    return replace(base, **overrides)  # type: ignore[arg-type]


def test_fifo_admits_in_arrival_order() -> None:
    sc = crowd(bot_share=0.1, bot_devices=4, dedupe_accounts=False)
    pop = population(sc)
    run = simulate(sc, pop, "fifo")
    admitted = [(pop.arrival[i], run.admitted_at[i]) for i in run.order if run.admitted_at[i] >= 0]
    assert len(admitted) > 1000
    assert [a for a, _ in admitted] == sorted(a for a, _ in admitted)
    assert [t for _, t in admitted] == sorted(t for _, t in admitted)
    # nobody is admitted before the opening, nor before arriving
    assert all(t >= max(a, sc.onsale_second) for a, t in admitted)


def test_random_draw_puts_the_whole_prequeue_first_in_a_shuffled_order() -> None:
    sc = crowd()
    pop = population(sc)
    run = simulate(sc, pop, "random")
    arrivals = [pop.arrival[i] for i in run.order]
    pre = sum(1 for a in pop.arrival if a < sc.onsale_second)
    assert all(a < sc.onsale_second for a in arrivals[:pre])
    assert arrivals[pre:] == sorted(arrivals[pre:])          # FIFO behind the draw
    assert arrivals[:pre] != sorted(arrivals[:pre])          # the draw really shuffles


def cohort_means(sc: Scenario, policy: str) -> list[float]:
    pop = population(sc)
    run = simulate(sc, pop, policy)
    by_minute: dict[int, list[int]] = {}
    for i, a in enumerate(pop.arrival):
        if a < sc.onsale_second and run.admitted_at[i] >= 0:
            by_minute.setdefault(a // 60, []).append(wait_after_opening(sc, pop, run, i))
    return [statistics.fmean(w) for _, w in sorted(by_minute.items())]


def test_random_draw_gives_prequeue_arrivals_the_same_expected_wait() -> None:
    sc = crowd()
    means = cohort_means(sc, "random")
    assert len(means) == 10
    overall = statistics.fmean(means)
    assert overall > 10   # a real queue: 30,000 people at 10 a second
    assert all(abs(m - overall) < 0.05 * overall for m in means), means


def test_fifo_makes_early_prequeue_arrivals_wait_less() -> None:
    means = cohort_means(crowd(), "fifo")
    assert means == sorted(means)
    assert means[-1] > 5 * means[0] + 100


def test_multi_device_bots_gain_share_in_a_draw_unless_accounts_are_deduplicated() -> None:
    # A bot wants as many tickets as a person: only the number of places differs.
    sc = crowd(bot_share=0.05, bot_devices=10, seats=4_000)
    deduped = compare(sc)["policies"]["random"]["bots"]
    several = compare(replace(sc, dedupe_accounts=False))["policies"]["random"]["bots"]
    assert deduped["places"] == deduped["people"]           # one place per account
    assert several["places"] == 10 * several["people"]
    share = deduped["population_share"]
    assert abs(deduped["seat_share"] - share) < 0.35 * share
    assert several["seat_share"] > 3 * deduped["seat_share"]


def test_with_deduplicated_accounts_a_bot_gains_little_even_under_fifo() -> None:
    sc = crowd(bot_share=0.05, bot_devices=10, seats=4_000)
    fifo = compare(sc)["policies"]["fifo"]["bots"]
    assert fifo["places"] == fifo["people"]
    assert fifo["seat_share"] < 2 * fifo["population_share"]


def test_totals_are_conserved() -> None:
    sc = crowd(bot_share=0.2, bot_devices=3, dedupe_accounts=False, seats=5_001,
               tickets_per_account=4, tickets_per_human=2)
    result = compare(sc)
    pop = population(sc)
    for policy, doc in result["policies"].items():
        t, humans, bots = doc["totals"], doc["humans"], doc["bots"]
        assert t["people"] == sc.visitors == t["humans"] + t["bots"], policy
        assert t["places"] == len(pop.arrival) == t["admitted"] + t["not_admitted"]
        assert t["places"] == t["humans"] + bots["places"]
        assert t["seats_sold"] == humans["seats"] + bots["seats"] == sc.seats  # sold out
        assert sum(c["people"] for c in doc["cohorts"]) == t["humans"]
        assert sum(doc["wait_histogram"]["counts"]) == sum(c["admitted"] for c in doc["cohorts"])
        assert sum(doc["admissions"]["counts"]) == t["admitted"]
        assert t["sold_out_after_seconds"] is not None


def test_nobody_exceeds_the_cap_or_the_rate() -> None:
    sc = crowd(active_cap=500, session_seconds=30, rate_min=60, rate_max=6_000)
    run = simulate(sc, population(sc), "fifo")
    assert run.peak_active == 500
    per_second = run.admitted_per_second
    for t in range(len(per_second)):
        assert sum(per_second[max(0, t - 29):t + 1]) <= 500
    assert per_second[0] <= 1   # the controller starts at the minimum: 1 a second
    assert max(per_second) <= 100


def test_the_horizon_leaves_the_rest_unadmitted() -> None:
    sc = crowd(rate_min=60, rate_max=60, horizon_seconds=120)
    doc = compare(sc)["policies"]["fifo"]["totals"]
    assert doc["admitted"] == 120
    assert doc["not_admitted"] == sc.visitors - 120


def test_the_same_seed_gives_the_same_answer_and_another_seed_another() -> None:
    sc = crowd(bot_share=0.1, bot_devices=2)
    assert compare(sc) == compare(sc)
    assert compare(sc)["policies"]["random"] != compare(replace(sc, seed=8))["policies"]["random"]


def test_presets_spread_exactly_the_visitors() -> None:
    for shape in ("flat", "spike", "early", "decay"):
        counts = preset_arrivals(shape, 12_345, 900, 300)
        assert len(counts) == 900 and sum(counts) == 12_345, shape
    spike = preset_arrivals("spike", 10_000, 900, 300)
    assert max(range(900), key=spike.__getitem__) in range(290, 311)
    early = preset_arrivals("early", 10_000, 900, 300)
    assert sum(early[:300]) > sum(early[300:])


def test_parse_fills_from_the_event_and_bounds_everything() -> None:
    sc = parse_scenario({"preset": "flat", "visitors": 1000, "seconds": 100},
                        {"seats": 300, "rate_min": 30, "rate_max": 90, "active_cap": 50,
                         "tickets_per_account": 1})
    assert sc.visitors == 1000 and sc.seats == 300 and sc.active_cap == 50
    assert sc.onsale_second == 50
    assert sc.tickets_per_human == 1   # never more than an account may buy
    assert parse_scenario({"arrivals": [1, 2, 3], "onsale_second": 1}).arrivals == (1, 2, 3)


@pytest.mark.parametrize(("body", "field"), [
    ({"arrivals": "lots"}, "arrivals"),
    ({"arrivals": [1, -1]}, "arrivals"),
    ({"arrivals": [0, 0]}, "arrivals"),
    ({"arrivals": [1], "preset": "flat"}, "arrivals"),
    ({"visitors": MAX_VISITORS + 1}, "visitors"),
    ({"preset": "tsunami"}, "preset"),
    ({"bot_share": 1.5}, "bot_share"),
    ({"bot_share": True}, "bot_share"),
    ({"bot_devices": 0}, "bot_devices"),
    ({"visitors": MAX_VISITORS, "bot_share": 1.0, "bot_devices": 50,
      "dedupe_accounts": False}, "bot_devices"),
    ({"rate_min": 100, "rate_max": 50}, "rate_max"),
    ({"dedupe_accounts": "yes"}, "dedupe_accounts"),
    ({"onsale_second": 999_999}, "onsale_second"),
    ({"colour": "blue"}, "colour"),
])
def test_bad_input_names_its_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(FairnessInputError) as caught:
        parse_scenario(body)
    assert caught.value.field == field
    assert caught.value.message
