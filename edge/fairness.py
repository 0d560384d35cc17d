"""The fairness lab's simulator (pure, deterministic, no I/O): how a crowd
would wait and who would reach the seats under ``fifo`` and under a
``random`` draw, with one event's settings (docs/console.md).

The model, in the waiting room's own terms (docs/edge.md):

- ``arrivals[s]`` people arrive in second ``s`` (second 0 = the queue opens);
  the sale opens at ``onsale_second``: arrivals before it form the pre-queue.
- A share of the people are bots that join from ``bot_devices`` devices at
  once. With ``dedupe_accounts`` (onsale's rule: one place per account) all
  of a bot's devices share one account, so it holds one place: under FIFO the
  place of whichever device reached the queue first, in a random draw one
  ticket. Without it each device is a separate account with its own place and
  its own ticket allowance.
- Places: FIFO orders everybody by arrival (within one second, in random
  order: whoever reaches Redis first). A random draw orders the pre-queue in a
  random order at the opening; later arrivals queue FIFO behind it.
- Admission, each second from the opening: a token bucket at the current rate
  (at most one second of rate banked), the rate starting at ``rate_min`` and
  growing by a twentieth of the span every 2 s up to ``rate_max`` (the
  controller with core healthy), never more shoppers active than the cap; a
  shopper stays active ``session_seconds``.
- Admitted shoppers buy in the order they were admitted (the race for seats
  inside core is not modelled): a person wants ``tickets_per_human`` tickets,
  a bot account the most one account may buy; until the seats run out.

Waits are "after the opening": admission time minus the later of arrival and
opening (a pre-queue arrival's wait before the opening is the same whatever
the policy). Everything is seeded: the same scenario gives the same numbers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from onsale.edge.fairness_crowd import Crowd

POLICIES = ("fifo", "random")
PRESETS = ("flat", "spike", "early", "decay")
MAX_VISITORS = 1_000_000
MAX_ENTRIES = 2_000_000
MAX_SECONDS = 7_200          # length of an arrival profile
MAX_HORIZON = 86_400         # seconds of admission simulated after the opening
MAX_COHORTS = 60
HISTOGRAM_BINS = 30
SERIES_POINTS = 240


class FairnessInputError(ValueError):
    """A scenario the lab refuses; ``field`` names the offending input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Scenario:
    arrivals: tuple[int, ...]
    onsale_second: int
    seats: int
    tickets_per_account: int = 4
    tickets_per_human: int = 2
    bot_share: float = 0.0
    bot_devices: int = 1
    dedupe_accounts: bool = True
    rate_min: float = 60.0           # new shoppers per minute
    rate_max: float = 6_000.0
    active_cap: int = 10_000
    session_seconds: int = 300
    horizon_seconds: int = 21_600
    cohort_seconds: int = 60
    seed: int = 0
    # A real crowd (edge/fairness_crowd.py): its visitors instead of ``arrivals`` drawn
    # as strangers; ``arrivals`` is then its first joins per second.
    crowd: Crowd | None = field(default=None, compare=False, repr=False)

    @property
    def visitors(self) -> int:
        return len(self.crowd.visitors) if self.crowd is not None else sum(self.arrivals)


# -- arrival profiles -------------------------------------------------------

def _spread(total: int, weights: list[float]) -> list[int]:
    """Integers proportional to ``weights`` summing exactly to ``total``
    (largest remainder)."""
    mass = sum(weights)
    if total <= 0 or mass <= 0:
        return [0] * len(weights)
    exact = [total * w / mass for w in weights]
    counts = [int(x) for x in exact]
    short = total - sum(counts)
    by_remainder = sorted(range(len(weights)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_remainder[:short]:
        counts[i] += 1
    return counts


def preset_arrivals(shape: str, visitors: int, seconds: int, onsale_second: int) -> list[int]:
    """A shaped profile of ``visitors`` arrivals over ``seconds`` seconds:
    ``flat``; ``spike`` (most arrive in the minute around the opening);
    ``early`` (most in the pre-queue); ``decay`` (a rush at the opening that
    fades)."""
    if shape not in PRESETS:
        raise FairnessInputError("preset", f"preset must be one of {', '.join(PRESETS)}")
    o = onsale_second
    weights: list[float] = []
    for s in range(seconds):
        if shape == "flat":
            w = 1.0
        elif shape == "spike":
            w = 0.05 + 20.0 * math.exp(-(((s - o) / 20.0) ** 2))
        elif shape == "early":
            w = 3.0 if s < o else math.exp(-(s - o) / 120.0)
        else:  # decay
            w = 0.05 if s < o else math.exp(-(s - o) / 90.0)
        weights.append(w)
    return _spread(visitors, weights)


# -- input ------------------------------------------------------------------

def _int(body: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise FairnessInputError(name, f"{name} must be a whole number from {lo} to {hi}")
    return value


def _num(body: Mapping[str, Any], name: str, default: float, lo: float, hi: float) -> float:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise FairnessInputError(name, f"{name} must be a number from {lo:g} to {hi:g}")
    return float(value)


def parse_scenario(body: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
                   ) -> Scenario:
    """A bounded scenario from a request body; ``defaults`` (an event's
    settings) fill what the body leaves out."""
    known = ({f.name for f in fields(Scenario)} - {"crowd"}
             | {"preset", "visitors", "seconds", "event_id"})
    unknown = sorted(set(body) - known)
    if unknown:
        raise FairnessInputError(unknown[0], f"unknown field {unknown[0]}; "
                                 f"known: {', '.join(sorted(known))}")
    merged: dict[str, Any] = {**(defaults or {}), **body}
    if "arrivals" in body and "preset" in body:
        raise FairnessInputError("arrivals", "give either arrivals or a preset, not both")
    if "arrivals" in body:
        raw = body["arrivals"]
        if (not isinstance(raw, list) or not 1 <= len(raw) <= MAX_SECONDS
                or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c
                           for c in raw)):
            raise FairnessInputError("arrivals", "arrivals must be a list of 1 to "
                                     f"{MAX_SECONDS} counts (whole numbers, 0 or more)")
        seconds = len(raw)
        onsale = _int(merged, "onsale_second", min(seconds // 2, 600), 0, seconds)
        arrivals = [int(c) for c in raw]
    else:
        seconds = _int(merged, "seconds", 1_200, 1, MAX_SECONDS)
        onsale = _int(merged, "onsale_second", min(seconds // 2, 600), 0, seconds)
        visitors = _int(merged, "visitors", 20_000, 1, MAX_VISITORS)
        preset = merged.get("preset", "spike")
        if not isinstance(preset, str):
            raise FairnessInputError("preset", f"preset must be one of {', '.join(PRESETS)}")
        arrivals = preset_arrivals(preset, visitors, seconds, onsale)
    total = sum(arrivals)
    if not 1 <= total <= MAX_VISITORS:
        raise FairnessInputError("arrivals", f"between 1 and {MAX_VISITORS:,} visitors in all")
    share = _num(merged, "bot_share", 0.0, 0.0, 1.0)
    devices = _int(merged, "bot_devices", 1, 1, 50)
    if total * (1 + share * (devices - 1)) > MAX_ENTRIES:
        raise FairnessInputError("bot_devices", f"at most {MAX_ENTRIES:,} devices in all")
    dedupe = merged.get("dedupe_accounts", True)
    if not isinstance(dedupe, bool):
        raise FairnessInputError("dedupe_accounts", "dedupe_accounts must be true or false")
    rate_min = _num(merged, "rate_min", 60, 1, 1_000_000)
    rate_max = _num(merged, "rate_max", 6_000, 1, 1_000_000)
    if rate_max < rate_min:
        raise FairnessInputError("rate_max", "rate_max must not be below rate_min")
    per_account = _int(merged, "tickets_per_account", 4, 1, 100)
    return Scenario(
        arrivals=tuple(arrivals), onsale_second=onsale,
        seats=_int(merged, "seats", 50_000, 1, 10_000_000),
        tickets_per_account=per_account,
        tickets_per_human=min(per_account, _int(merged, "tickets_per_human", 2, 1, 100)),
        bot_share=share, bot_devices=devices, dedupe_accounts=dedupe,
        rate_min=rate_min, rate_max=rate_max,
        active_cap=_int(merged, "active_cap", 10_000, 1, 10_000_000),
        session_seconds=_int(merged, "session_seconds", 300, 1, 86_400),
        horizon_seconds=_int(merged, "horizon_seconds", 21_600, 60, MAX_HORIZON),
        cohort_seconds=_int(merged, "cohort_seconds", 60, 1, MAX_SECONDS),
        seed=_int(merged, "seed", 0, 0, 2**63 - 1),
    )


# -- the simulation ---------------------------------------------------------

@dataclass
class Population:
    """The visitors, and the places they take (entries: one per account)."""

    is_bot: list[bool]        # per visitor
    arrival: list[int]        # per entry: arrival second
    owner: list[int]          # per entry: the visitor
    jitter: list[float]       # per entry: order within its arrival second


def population(sc: Scenario) -> Population:
    if sc.crowd is not None:
        return crowd_population(sc, sc.crowd)
    rng = random.Random(f"onsale.fairness.population:{sc.seed}")
    rnd = rng.random
    is_bot: list[bool] = []
    arrival: list[int] = []
    owner: list[int] = []
    jitter: list[float] = []
    k = sc.bot_devices
    for second, count in enumerate(sc.arrivals):
        for _ in range(count):
            visitor = len(is_bot)
            bot = sc.bot_share > 0 and rnd() < sc.bot_share
            is_bot.append(bot)
            if not bot or k == 1:
                places, first = 1, rnd()
            elif sc.dedupe_accounts:  # one account: the first device to arrive holds it
                places, first = 1, min(rnd() for _ in range(k))
            else:
                places, first = k, rnd()
            arrival.append(second)
            owner.append(visitor)
            jitter.append(first)
            for _ in range(places - 1):
                arrival.append(second)
                owner.append(visitor)
                jitter.append(rnd())
    return Population(is_bot, arrival, owner, jitter)


def crowd_population(sc: Scenario, crowd: Crowd) -> Population:
    """The places a real crowd takes. A visitor's devices are its joins; one not known
    either way is a bot at ``bot_share``, and a bot joins from at least ``bot_devices``
    devices (the extra ones with its first). With ``dedupe_accounts`` an account holds
    one place, from its first join; without it, one per device."""
    rnd = random.Random(f"onsale.fairness.crowd:{sc.seed}").random
    pop = Population([], [], [], [])
    for visitor, v in enumerate(crowd.visitors):
        bot = v.bot if v.bot is not None else sc.bot_share > 0 and rnd() < sc.bot_share
        pop.is_bot.append(bot)
        joins = list(v.joins)
        if bot and len(joins) < sc.bot_devices:
            joins += [joins[0]] * (sc.bot_devices - len(joins))
        for second in joins[:1] if sc.dedupe_accounts else joins:
            pop.arrival.append(second)
            pop.owner.append(visitor)
            pop.jitter.append(rnd())
    return pop


@dataclass
class Run:
    policy: str
    order: list[int]             # entries in queue order
    admitted_at: list[int]       # per entry: second admitted, -1 = not within the horizon
    seats_bought: list[int]      # per entry
    admitted_per_second: list[int]   # from the opening on
    peak_active: int


def queue_order(sc: Scenario, pop: Population, policy: str) -> list[int]:
    if policy not in POLICIES:
        raise FairnessInputError("policy", f"policy must be one of {', '.join(POLICIES)}")
    arrival, jitter = pop.arrival, pop.jitter
    if policy == "fifo":
        keys = [a + j for a, j in zip(arrival, jitter, strict=True)]
    else:  # the pre-queue drawn at the opening: one ticket per account
        draw = random.Random(f"onsale.fairness.draw:{sc.seed}").random
        o = sc.onsale_second
        keys = [a + j if a >= o else draw() - 2.0 for a, j in zip(arrival, jitter, strict=True)]
    return sorted(range(len(keys)), key=keys.__getitem__)


def simulate(sc: Scenario, pop: Population, policy: str) -> Run:
    order = queue_order(sc, pop, policy)
    n = len(order)
    arrived_by = [0] * (len(sc.arrivals) + 1)   # entries arrived by the end of second s
    for a in pop.arrival:
        arrived_by[a] += 1
    for s in range(1, len(arrived_by)):
        arrived_by[s] += arrived_by[s - 1]
    last = len(sc.arrivals) - 1
    admitted_at = [-1] * n
    per_second: list[int] = []
    step = max(1.0, (sc.rate_max - sc.rate_min) / 20.0)
    rate, budget, admitted, active, peak = sc.rate_min, 0.0, 0, 0, 0
    t = sc.onsale_second
    while admitted < n and t < sc.onsale_second + sc.horizon_seconds:
        elapsed = t - sc.onsale_second
        if elapsed and elapsed % 2 == 0:
            rate = min(sc.rate_max, rate + step)
        per = rate / 60.0
        budget = min(max(1.0, per), budget + per)
        if elapsed >= sc.session_seconds:
            active -= per_second[elapsed - sc.session_seconds]
        available = arrived_by[min(t, last)] - admitted
        k = max(0, min(int(budget), sc.active_cap - active, available))
        for i in order[admitted:admitted + k]:
            admitted_at[i] = t
        admitted += k
        active += k
        peak = max(peak, active)
        budget -= k
        per_second.append(k)
        t += 1
    seats_bought = [0] * n
    left = sc.seats
    for i in order[:admitted]:
        if left <= 0:
            break
        want = sc.tickets_per_account if pop.is_bot[pop.owner[i]] else sc.tickets_per_human
        got = min(want, left)
        seats_bought[i] = got
        left -= got
    return Run(policy, order, admitted_at, seats_bought, per_second, peak)


# -- summaries --------------------------------------------------------------

def _percentile(sorted_values: list[int], q: float) -> int:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def _nice(width: float) -> int:
    for unit in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400):
        if unit >= width:
            return unit
    return 28800


def wait_after_opening(sc: Scenario, pop: Population, run: Run, entry: int) -> int:
    return run.admitted_at[entry] - max(pop.arrival[entry], sc.onsale_second)


def summarize(sc: Scenario, pop: Population, run: Run) -> dict[str, Any]:
    width = max(sc.cohort_seconds, math.ceil(len(sc.arrivals) / MAX_COHORTS))
    o = sc.onsale_second
    cohorts: dict[int, dict[str, Any]] = {}
    human_waits: list[int] = []
    bot_seats = human_seats = bots_with_seats = humans_with_seats = 0
    best_entry: dict[int, int] = {}   # a bot's best outcome over its places
    for i, a in enumerate(pop.arrival):
        v = pop.owner[i]
        if pop.is_bot[v]:
            bot_seats += run.seats_bought[i]
            if run.seats_bought[i]:
                best_entry[v] = 1
            continue
        c = math.floor((a - o) / width)
        row = cohorts.setdefault(c, {"people": 0, "waits": [], "with_seats": 0})
        row["people"] += 1
        if run.admitted_at[i] >= 0:
            w = run.admitted_at[i] - max(a, o)
            row["waits"].append(w)
            human_waits.append(w)
        if run.seats_bought[i]:
            row["with_seats"] += 1
            human_seats += run.seats_bought[i]
    humans_with_seats = sum(r["with_seats"] for r in cohorts.values())
    bots_with_seats = len(best_entry)
    cohort_rows = []
    for c in sorted(cohorts):
        row = cohorts[c]
        waits = sorted(row["waits"])
        cohort_rows.append({
            "from_second": c * width, "to_second": (c + 1) * width,
            "people": row["people"], "admitted": len(waits),
            "wait_p10": _percentile(waits, 0.1) if waits else None,
            "wait_p50": _percentile(waits, 0.5) if waits else None,
            "wait_p90": _percentile(waits, 0.9) if waits else None,
            "wait_mean": round(sum(waits) / len(waits), 2) if waits else None,
            "seat_share": round(row["with_seats"] / row["people"], 4),
        })
    human_waits.sort()
    top = human_waits[-1] if human_waits else 0
    bin_width = _nice(max(1, top + 1) / HISTOGRAM_BINS)
    histogram = [0] * (top // bin_width + 1) if human_waits else []
    for w in human_waits:
        histogram[w // bin_width] += 1
    bots = sum(pop.is_bot)
    people = len(pop.is_bot)
    sold = bot_seats + human_seats
    admitted = sum(1 for x in run.admitted_at if x >= 0)
    sold_out = None
    if sold >= sc.seats:
        sold_out = max(run.admitted_at[i] for i in range(len(run.admitted_at))
                       if run.seats_bought[i]) - o
    return {
        "policy": run.policy,
        "totals": {
            "people": people, "humans": people - bots, "bots": bots,
            "places": len(pop.arrival), "admitted": admitted,
            "not_admitted": len(pop.arrival) - admitted,
            "seats": sc.seats, "seats_sold": sold, "sold_out_after_seconds": sold_out,
            "last_admitted_after_seconds": len(run.admitted_per_second) - 1
            if admitted else None,
            "peak_active": run.peak_active,
        },
        "humans": {
            "seats": human_seats, "with_seats": humans_with_seats,
            "with_seats_share": round(humans_with_seats / (people - bots), 4)
            if people > bots else None,
            "wait_p50": _percentile(human_waits, 0.5) if human_waits else None,
            "wait_p90": _percentile(human_waits, 0.9) if human_waits else None,
        },
        "bots": {
            "people": bots, "places": len(pop.arrival) - (people - bots),
            "seats": bot_seats, "with_seats": bots_with_seats,
            "population_share": round(bots / people, 4),
            "seat_share": round(bot_seats / sold, 4) if sold else 0.0,
        },
        "cohorts": cohort_rows,
        "wait_histogram": {"bin_seconds": bin_width, "counts": histogram},
        "admissions": _series(run.admitted_per_second),
    }


def _series(per_second: list[int]) -> dict[str, Any]:
    bucket = max(1, math.ceil(len(per_second) / SERIES_POINTS))
    return {"bucket_seconds": bucket,
            "counts": [sum(per_second[i:i + bucket]) for i in range(0, len(per_second), bucket)]}


def compare(sc: Scenario) -> dict[str, Any]:
    """Both policies on the same crowd (same people, same bots, same seed)."""
    pop = population(sc)
    return {
        "scenario": {
            "seconds": len(sc.arrivals), "onsale_second": sc.onsale_second,
            "people": sc.visitors, "seats": sc.seats,
            "tickets_per_account": sc.tickets_per_account,
            "tickets_per_human": sc.tickets_per_human, "bot_share": sc.bot_share,
            "bot_devices": sc.bot_devices, "dedupe_accounts": sc.dedupe_accounts,
            "rate_min": sc.rate_min, "rate_max": sc.rate_max, "active_cap": sc.active_cap,
            "session_seconds": sc.session_seconds, "horizon_seconds": sc.horizon_seconds,
            "seed": sc.seed, "arrivals": _series(list(sc.arrivals)),
        },
        "policies": {p: summarize(sc, pop, simulate(sc, pop, p)) for p in POLICIES},
    }
