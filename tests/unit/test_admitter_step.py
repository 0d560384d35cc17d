"""edge.admitter_step: one event's tick as the actions it asks for, fed literal answers
(the lease, the sweep, the health, the admission), one test per queue-policy branch."""

from __future__ import annotations

import dataclasses

import pytest

from onsale.edge.admitter_step import (
    AcquireLease,
    Action,
    Admit,
    Answer,
    CountPrequeue,
    Draw,
    Drawn,
    EventRun,
    EventStep,
    Leased,
    Merged,
    MergePrequeue,
    Prequeue,
    Publish,
    Published,
    ReadHealth,
    ReadStatus,
    Rules,
    Sweep,
)
from onsale.edge.caches import EventConfig, Status
from onsale.edge.controller import (
    HOLDING,
    INCREASING,
    PAUSED,
    UNHEALTHY,
    Decision,
    Health,
    Targets,
)
from onsale.edge.queue_store import Admitted, Swept

WALL = 1_900_000_000.0  # unix seconds at the tick
NOW = 500.0             # monotonic seconds at the tick
RULES = Rules(owner="edge-1", lease_ms=2000, abandon_ms=300_000, claim_ms=120_000,
              idle_ms=600_000, targets=Targets(), control_seconds=2.0)
OPEN = EventConfig(event_id=42, policy="fifo", prequeue_at=None, onsale_at=WALL - 60,
                   starts_at=WALL + 3600, rate_min=600, rate_max=6000, cap=100,
                   pow_difficulty=0, paused=False, commitment=None, seed=None,
                   clock_offset=0.0)
HEALTHY = Health(core_ok=True, redis_ok=True, active=3, cap=100)
SWEPT = Swept(abandoned=0, no_show=0, expired=0, active=2, pending=1)
SWEEP = Sweep(fence=7, now_ms=int(WALL * 1000), grace_ms=300_000, claim_ms=120_000,
              idle_ms=600_000)
STAMP = {"updated": f"{WALL:.3f}", "owner": "edge-1"}


def config(**changes: object) -> EventConfig:
    return dataclasses.replace(OPEN, **changes)  # type: ignore[arg-type]


def held(**changes: object) -> EventRun:
    """A run under fence 7 whose last admission step was one second ago."""
    return dataclasses.replace(EventRun(fence=7, last=NOW - 1.0, rate=600.0),
                               **changes)  # type: ignore[arg-type]


def tick(run: EventRun | None, event: EventConfig, *answers: Answer,
         fence: int = 7, now: float = NOW, wall: float = WALL,
         rules: Rules = RULES) -> tuple[list[Action], EventStep]:
    """Every action of one tick, fed the lease and then ``answers`` in order, each
    answer taken by the first action of its kind."""
    by_kind: dict[type, list[Answer]] = {}
    for answer in answers:
        by_kind.setdefault(type(answer), []).append(answer)
    replies: dict[type, type] = {
        AcquireLease: Leased, ReadStatus: Status, Sweep: Swept, Draw: Drawn,
        CountPrequeue: Prequeue, MergePrequeue: Merged, ReadHealth: Health,
        Admit: Admitted, Publish: Published}
    defaults: dict[type, Answer] = {
        Leased: Leased(fence, now, wall), Status: Status(), Swept: SWEPT, Drawn: Drawn(),
        Prequeue: Prequeue(0), Merged: Merged(), Health: HEALTHY, Admitted: Admitted(0, 0, []),
        Published: Published()}
    step = EventStep(run, event, rules)
    done: list[Action] = []
    action: Action | None = step.start()
    while action is not None:
        done.append(action)
        kind = replies[type(action)]
        queued = by_kind.get(kind)
        answer = queued.pop(0) if queued else defaults[kind]
        action = step.feed(answer)
    return done, step


def kinds(actions: list[Action]) -> list[str]:
    return [type(a).__name__ for a in actions]


# ---- the lease ---------------------------------------------------------------


def test_another_admitters_lease_ends_the_tick_and_forgets_the_event() -> None:
    actions, step = tick(held(), OPEN, fence=0)
    assert actions == [AcquireLease(2000)] and step.run is None


def test_a_new_lease_reads_whether_the_draw_was_done_then_starts_a_run() -> None:
    actions, step = tick(None, config(policy="random"), Status(draw="drawn"))
    assert kinds(actions)[:3] == ["AcquireLease", "ReadStatus", "Sweep"]
    assert "Draw" not in kinds(actions)  # drawn under an earlier lease: not again
    assert step.run is not None
    assert (step.run.fence, step.run.drawn, step.run.last) == (7, True, NOW)
    # A lease taken over from another holder (a newer fence) starts a new run too.
    actions, step = tick(held(fence=6, admitted=40), OPEN)
    assert kinds(actions)[:2] == ["AcquireLease", "ReadStatus"]
    assert step.run is not None and (step.run.fence, step.run.admitted) == (7, 0)


def test_the_same_lease_goes_straight_to_the_sweep_with_the_settings_bounds() -> None:
    actions, _ = tick(held(), OPEN)
    assert actions[:2] == [AcquireLease(2000), SWEEP]


# ---- before the sale, and passthrough ------------------------------------------


def test_before_the_sale_only_the_status_is_published() -> None:
    run = held(rate=900.0)
    actions, _ = tick(run, config(onsale_at=WALL + 1, paused=True))
    assert actions[2:] == [Publish({**STAMP, "state": "waiting", "paused": 1,
                                    "rate": 900.0, "measured": 0})]
    assert run.last == NOW  # the bucket starts filling when the sale opens, not before


def test_the_sale_opens_by_the_databases_clock() -> None:
    behind = config(onsale_at=WALL + 1, clock_offset=2.0)  # the database is 2 s ahead
    assert "Admit" in kinds(tick(held(), behind)[0])


def test_passthrough_publishes_its_policy_and_admits_nobody() -> None:
    actions, _ = tick(held(), config(policy="passthrough"))
    assert kinds(actions) == ["AcquireLease", "Sweep", "Publish"]
    assert actions[-1] == Publish({**STAMP, "state": "passthrough", "paused": 0,
                                   "rate": 600.0, "measured": 0})


# ---- the draw and the pre-queue --------------------------------------------------


def test_random_draws_once_when_the_sale_opens() -> None:
    run = held()
    actions, _ = tick(run, config(policy="random"))
    assert kinds(actions) == ["AcquireLease", "Sweep", "Draw", "ReadHealth", "Admit",
                              "Publish"]
    assert actions[2] == Draw(fence=7) and run.drawn
    assert "Draw" not in kinds(tick(run, config(policy="random"))[0])


def test_fifo_merges_a_waiting_prequeue_once() -> None:
    run = held()
    actions, _ = tick(run, OPEN, Prequeue(3))
    assert kinds(actions)[2:5] == ["CountPrequeue", "MergePrequeue", "ReadHealth"]
    assert actions[3] == MergePrequeue(fence=7) and run.merged
    assert "CountPrequeue" not in kinds(tick(run, OPEN)[0])  # not asked again


def test_fifo_with_an_empty_prequeue_merges_nothing() -> None:
    run = held()
    actions, _ = tick(run, OPEN, Prequeue(0))
    assert kinds(actions)[2:4] == ["CountPrequeue", "ReadHealth"] and run.merged


def test_fifo_after_a_draw_leaves_the_drawn_places_alone() -> None:
    run = held(drawn=True)  # the event was random when the sale opened
    actions, _ = tick(run, OPEN)
    assert "CountPrequeue" not in kinds(actions) and run.merged


# ---- the controller and the bucket -----------------------------------------------


def test_the_controller_is_asked_every_control_period_with_the_occupancy() -> None:
    run = held(merged=True)
    actions, _ = tick(run, OPEN)
    assert actions[2] == ReadHealth(active=3, cap=100)  # active 2 + pending 1
    assert run.decision is not None and run.decision.state == INCREASING
    assert (run.rate, run.controlled) == (870.0, NOW)  # 600 + a 20th of the span
    between, _ = tick(run, OPEN, now=NOW + 1.0)
    assert "ReadHealth" not in kinds(between)
    again, _ = tick(run, OPEN, now=NOW + 2.0)
    assert "ReadHealth" in kinds(again)


def test_the_bucket_admits_at_the_rate_and_keeps_the_fraction() -> None:
    run = held(merged=True, last=NOW - 0.5, carry=0.25)
    actions, _ = tick(run, OPEN)
    # 870 a minute is 14.5 a second: 0.5 s gives 7.25, plus 0.25 carried
    assert actions[3] == Admit(fence=7, n=7, now_ms=int(WALL * 1000), grace_ms=300_000,
                               cap=100)
    assert (run.last, run.carry) == (NOW, 0.5)


def test_the_cap_bounds_the_admission() -> None:
    run = held(merged=True)
    full = Swept(abandoned=0, no_show=0, expired=0, active=95, pending=3)
    actions, _ = tick(run, OPEN, full)
    admit = actions[3]
    assert isinstance(admit, Admit) and admit.n == 2  # room for 2 under the cap of 100


def test_an_operator_pause_is_decided_at_once_and_admits_nobody() -> None:
    run = held(merged=True, controlled=NOW,
               decision=Decision(870.0, INCREASING, ("healthy",)))
    actions, _ = tick(run, config(paused=True))
    assert kinds(actions)[2:] == ["ReadHealth", "Admit", "Publish"]  # within the period
    admit, publish = actions[3], actions[4]
    assert isinstance(admit, Admit) and admit.n == 0 and run.carry == 0.0
    assert publish == Publish({**STAMP, "state": PAUSED, "paused": 1, "rate": "600.000",
                               "measured": "0.000", "reason": "paused by an operator"})


def test_an_unhealthy_core_pauses_admission() -> None:
    run = held(merged=True)
    actions, _ = tick(run, OPEN, Health(core_ok=False, redis_ok=True))
    admit, publish = actions[3], actions[4]
    assert isinstance(admit, Admit) and admit.n == 0
    assert isinstance(publish, Publish)
    assert (publish.fields["state"], publish.fields["paused"]) == (UNHEALTHY, 1)
    assert publish.fields["reason"] == "core unhealthy"


def test_between_decisions_new_bounds_clamp_the_rate() -> None:
    run = held(merged=True, rate=5000.0, controlled=NOW,
               decision=Decision(5000.0, HOLDING, ("at the maximum rate",)))
    actions, _ = tick(run, config(rate_max=1200), now=NOW + 0.5)
    assert "ReadHealth" not in kinds(actions)
    assert run.rate == 1200 and run.decision == Decision(1200, HOLDING,
                                                         ("at the maximum rate",))
    assert isinstance(actions[-1], Publish) and actions[-1].fields["rate"] == "1200.000"


def test_the_published_status_counts_what_was_admitted() -> None:
    run = held(merged=True)
    tick(run, OPEN, Admitted(serving=10, abandoned=0, accounts=["a"] * 10))
    actions, _ = tick(run, OPEN, Admitted(serving=40, abandoned=0, accounts=["b"] * 30),
                      now=NOW + 1.0)
    assert run.admitted == 40
    assert actions[-1] == Publish({**STAMP, "state": INCREASING, "paused": 0,
                                   "rate": "870.000", "measured": "1800.000",
                                   "reason": "healthy"})


def test_answers_out_of_order_are_refused() -> None:
    step = EventStep(None, OPEN, RULES)
    with pytest.raises(RuntimeError):
        step.feed(SWEPT)
