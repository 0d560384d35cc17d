"""Sweeps of the fairness lab (pure, no I/O): the product of settings, each point run on
the same crowd, and its figures as rows (docs/fairness.md). ``onsale fairness`` runs the
points (on several cores) and writes the rows; this module only says what they are.

An axis is given as a list (``fifo,random``; ``60,120,300``) or a range
(``1..10``, step 1; ``0..0.5/0.1``). The axes:

- ``policy``: ``fifo`` or ``random`` (a random draw of the pre-queue);
- ``prequeue``: how many seconds before the opening the queue takes people; whoever
  comes earlier joins when it opens (the whole crowd's window when not swept);
- ``rate_min``, ``rate_max`` (shoppers admitted per minute), ``active_cap``,
  ``session_seconds``, ``tickets_per_account``, ``seats``: the event's settings;
- ``bot_share`` (of the visitors not known either way) and ``bot_devices``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from typing import Any

from onsale.edge.fairness import (
    POLICIES,
    FairnessInputError,
    Scenario,
    parse_scenario,
    population,
    simulate,
    summarize,
)
from onsale.edge.fairness_crowd import Crowd, Visitor

# name -> kind: what an axis's values are
AXES: dict[str, type] = {
    "policy": str, "prequeue": int, "rate_min": float, "rate_max": float,
    "active_cap": int, "session_seconds": int, "tickets_per_account": int, "seats": int,
    "bot_share": float, "bot_devices": int}
MAX_POINTS = 10_000


def _number(text: str, kind: type, axis: str) -> int | float:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise FairnessInputError(axis, f"{axis}: {text!r} is not a number") from None
    if kind is int:
        if value != value.to_integral_value():
            raise FairnessInputError(axis, f"{axis}: {text!r} is not a whole number")
        return int(value)
    return float(value)


def parse_axis(axis: str, text: str) -> tuple[Any, ...]:
    """An axis's values from ``a,b,c`` or ``start..stop`` (``/step``), in order."""
    kind = AXES.get(axis)
    if kind is None:
        raise FairnessInputError(axis, f"unknown axis {axis}; known: {', '.join(AXES)}")
    if kind is str:
        values = tuple(v.strip() for v in text.split(",") if v.strip())
        bad = [v for v in values if v not in POLICIES]
        if not values or bad:
            raise FairnessInputError(axis, f"policy is one or more of {', '.join(POLICIES)}")
        return values
    if ".." not in text:
        return tuple(_number(v, kind, axis) for v in text.split(","))
    start_text, _, rest = text.partition("..")
    stop_text, _, step_text = rest.partition("/")
    start, stop = _number(start_text, kind, axis), _number(stop_text, kind, axis)
    step = _number(step_text, kind, axis) if step_text else 1
    if step <= 0 or stop < start:
        raise FairnessInputError(axis, f"{axis}: a range goes up, by a positive step")
    count = math.floor((Decimal(str(stop)) - Decimal(str(start))) / Decimal(str(step))) + 1
    if count > MAX_POINTS:
        raise FairnessInputError(axis, f"{axis}: at most {MAX_POINTS:,} values")
    steps = [Decimal(str(start)) + i * Decimal(str(step)) for i in range(count)]
    return tuple(int(v) if kind is int else float(v) for v in steps)


def points(axes: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the axes' values (the last axis varies fastest)."""
    names = list(axes)
    total = math.prod(len(axes[n]) for n in names)
    if total > MAX_POINTS:
        raise FairnessInputError(names[-1], f"{total:,} points: at most {MAX_POINTS:,}")
    return [dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(axes[n] for n in names))]


def with_prequeue(sc: Scenario, window: int) -> Scenario:
    """``sc`` with the queue opening ``window`` seconds before the sale: earlier arrivals
    join at that moment instead."""
    opens = sc.onsale_second - window
    if opens <= 0:
        return sc
    arrivals = list(sc.arrivals)
    early = sum(arrivals[:opens])
    arrivals[:opens] = [0] * opens
    arrivals[opens] += early
    crowd = sc.crowd
    if crowd is not None:
        crowd = Crowd(tuple(Visitor(tuple(sorted(max(j, opens) for j in v.joins)), v.bot)
                            for v in crowd.visitors), crowd.start)
    return replace(sc, arrivals=tuple(arrivals), crowd=crowd)


def point_scenario(base: Mapping[str, Any], crowd: Crowd | None,
                   point: Mapping[str, Any]) -> Scenario:
    """The scenario of one point: the base body with the point's settings, checked like
    the lab's request (parse_scenario), on the crowd if there is one."""
    settings = {k: v for k, v in point.items() if k not in ("policy", "prequeue")}
    sc = parse_scenario({**base, **settings})
    if crowd is not None:
        sc = replace(sc, crowd=crowd)
    if "prequeue" in point:
        if point["prequeue"] < 0:
            raise FairnessInputError("prequeue", "prequeue is 0 or more seconds")
        sc = with_prequeue(sc, point["prequeue"])
    return sc


def run_point(base: Mapping[str, Any], crowd: Crowd | None,
              point: Mapping[str, Any]) -> dict[str, Any]:
    """One point's summary for each of its policies (both when ``policy`` is not swept)."""
    sc = point_scenario(base, crowd, point)
    pop = population(sc)
    policies = [point["policy"]] if "policy" in point else list(POLICIES)
    return {"point": dict(point),
            "policies": {p: summarize(sc, pop, simulate(sc, pop, p)) for p in policies}}


SUMMARY_COLUMNS = ("policy", "people", "bots", "seats", "seats_sold",
                   "humans_served_share", "bot_ticket_share", "human_wait_p50",
                   "human_wait_p90", "sold_out_after_seconds")
COHORT_COLUMNS = ("policy", "from_second", "to_second", "people", "admitted", "wait_p10",
                  "wait_p50", "wait_p90", "wait_mean", "seat_share")


def summary_rows(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per point and policy: who got the tickets, and how long humans waited."""
    rows = []
    for result in results:
        for policy, s in result["policies"].items():
            rows.append({**result["point"], "policy": policy,
                         "people": s["totals"]["people"], "bots": s["totals"]["bots"],
                         "seats": s["totals"]["seats"], "seats_sold": s["totals"]["seats_sold"],
                         "humans_served_share": s["humans"]["with_seats_share"],
                         "bot_ticket_share": s["bots"]["seat_share"],
                         "human_wait_p50": s["humans"]["wait_p50"],
                         "human_wait_p90": s["humans"]["wait_p90"],
                         "sold_out_after_seconds": s["totals"]["sold_out_after_seconds"]})
    return rows


def cohort_rows(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per point, policy and arrival cohort: the wait percentiles after the
    opening, and the cohort's share of people who got seats."""
    return [{**result["point"], "policy": policy,
             **{k: c[k] for k in COHORT_COLUMNS if k != "policy"}}
            for result in results
            for policy, s in result["policies"].items()
            for c in s["cohorts"]]
