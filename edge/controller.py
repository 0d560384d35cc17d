"""The adaptive admission controller (pure): AIMD on the admission rate from a
snapshot of core health.

Every decision keeps the rate between the operator's bounds. While every
signal is within its target the rate grows by a fixed step (additive
increase); when any target is breached it is multiplied by ``decrease``
(multiplicative decrease). When core or Redis is unhealthy, or an operator
paused the event, admission pauses: the rate is kept, nobody is admitted, and
queued visitors keep their places.
"""

from __future__ import annotations

from dataclasses import dataclass

PAUSED = "paused"              # an operator paused admission
UNHEALTHY = "unhealthy"        # core or Redis down: admission paused
DECREASING = "decreasing"
HOLDING = "holding"
INCREASING = "increasing"


@dataclass(frozen=True)
class Health:
    """One snapshot. None for a signal means "no data in the window" (no
    traffic): it neither breaches nor argues for more."""

    core_ok: bool
    redis_ok: bool
    hold_p99_ms: float | None = None
    lock_wait_p99_ms: float | None = None
    conflict_rate: float | None = None        # 409 seats_unavailable / hold attempts
    payment_error_rate: float | None = None   # unknown or failed provider answers / answers
    completion_rate: float | None = None      # confirmed orders / holds created
    active: int = 0                           # active shoppers + admitted, not yet arrived
    cap: int = 10_000


@dataclass(frozen=True)
class Targets:
    hold_p99_ms: float = 300.0
    lock_wait_p99_ms: float = 100.0
    conflict_rate: float = 0.6
    payment_error_rate: float = 0.05
    completion_floor: float = 0.0    # 0 disables; below it the rate stops growing
    active_headroom: float = 0.9     # at this share of the cap the rate stops growing


@dataclass(frozen=True)
class Bounds:
    min_rate: float
    max_rate: float
    step: float | None = None        # additive increase; default a 20th of the span
    decrease: float = 0.5

    def clamp(self, rate: float) -> float:
        return min(self.max_rate, max(self.min_rate, rate))

    @property
    def increase(self) -> float:
        if self.step is not None:
            return self.step
        return max(1.0, (self.max_rate - self.min_rate) / 20.0)


@dataclass(frozen=True)
class Decision:
    rate: float
    state: str
    reasons: tuple[str, ...]

    @property
    def admitting(self) -> bool:
        return self.state not in (PAUSED, UNHEALTHY)


def breaches(health: Health, targets: Targets) -> list[str]:
    out: list[str] = []
    checks = (("hold_p99_ms", health.hold_p99_ms, targets.hold_p99_ms),
              ("lock_wait_p99_ms", health.lock_wait_p99_ms, targets.lock_wait_p99_ms),
              ("conflict_rate", health.conflict_rate, targets.conflict_rate),
              ("payment_error_rate", health.payment_error_rate, targets.payment_error_rate))
    for name, value, target in checks:
        if value is not None and value > target:
            out.append(f"{name} {value:.3g} > {target:.3g}")
    return out


def decide(rate: float, health: Health, bounds: Bounds, targets: Targets, *,
           operator_paused: bool = False) -> Decision:
    rate = bounds.clamp(rate)
    if operator_paused:
        return Decision(rate, PAUSED, ("paused by an operator",))
    down = [name for name, ok in (("core", health.core_ok), ("redis", health.redis_ok)) if not ok]
    if down:  # admission restarts at the minimum rate once they are back (a failover)
        return Decision(bounds.min_rate, UNHEALTHY, tuple(f"{name} unhealthy" for name in down))
    breached = breaches(health, targets)
    if breached:
        return Decision(bounds.clamp(rate * bounds.decrease), DECREASING, tuple(breached))
    holds: list[str] = []
    if health.active >= targets.active_headroom * health.cap:
        holds.append(f"active {health.active} near the cap {health.cap}")
    if (targets.completion_floor > 0 and health.completion_rate is not None
            and health.completion_rate < targets.completion_floor):
        holds.append(f"completion_rate {health.completion_rate:.3g} "
                     f"< {targets.completion_floor:.3g}")
    if holds:
        return Decision(rate, HOLDING, tuple(holds))
    if rate >= bounds.max_rate:
        return Decision(rate, HOLDING, ("at the maximum rate",))
    return Decision(bounds.clamp(rate + bounds.increase), INCREASING, ("healthy",))
