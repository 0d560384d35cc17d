"""One event's part of an admitter tick, apart from I/O (pure).

An ``EventStep`` is fed what Redis answered and returns the next thing to do, the
shape of websockets' ``Protocol`` and of ``kernel.breaker``: ``start()`` gives the
first action, ``feed(answer)`` takes the answer to the last one and gives the next,
None when the tick is over. ``edge.admitter`` performs each action and feeds the
answer back; it decides nothing.

The actions, and the answer each is fed back with, in the order a tick takes them:

- ``AcquireLease`` -> ``Leased`` (the fencing token, 0 when another admitter holds
  the lease, and when it came: the tick's clocks);
- ``ReadStatus`` -> ``caches.Status``: only on a new lease, whether the draw is done;
- ``Sweep`` -> ``queue_store.Swept``: ghosts, no-shows and idle sessions out;
  the active shoppers and the admitted not yet arrived, who fill the cap;
- before the sale, or with the ``passthrough`` policy: ``Publish`` the event's
  status, and nothing else;
- ``random``, not drawn yet: ``Draw`` -> ``Drawn``, or ``DrawWaiting`` while the
  committed beacon round is not published: ``Publish`` the state ``drawing``, and
  nothing else;
- ``fifo``, the pre-queue not merged yet and no draw before:
  ``CountPrequeue`` -> ``Prequeue``, and when it holds anyone ``MergePrequeue``
  -> ``Merged``;
- the controller every ``control_seconds``, and at once for an operator's pause:
  ``ReadHealth`` -> ``controller.Health``; between, the last decision, its rate
  clamped to the event's bounds;
- ``Admit`` (the token bucket's count, under the cap) -> ``queue_store.Admitted``;
- ``Publish`` the controller's state and the measured rate -> ``Published``.

Every write is fenced: a fenced action carries the token, and Redis refuses it
(``queue_store.Fenced``) once a newer admitter holds the lease.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from onsale.edge.admission import RateMeter, admit_budget
from onsale.edge.caches import EventConfig, Status
from onsale.edge.controller import Bounds, Decision, Health, Targets, decide
from onsale.edge.queue_store import Admitted, Swept

PASSTHROUGH, RANDOM, FIFO = "passthrough", "random", "fifo"

StatusFields = dict[str, str | int | float]


@dataclass
class EventRun:
    """What this admitter knows about one event while it holds the lease."""

    fence: int
    last: float                 # monotonic seconds of the last admission step
    rate: float                 # the controller's rate, per minute
    carry: float = 0.0          # the token bucket's fractional allowance
    admitted: int = 0
    drawn: bool = False
    merged: bool = False        # the fifo pre-queue is merged into the queue
    decision: Decision | None = None
    health: Health | None = None
    controlled: float = 0.0     # monotonic seconds of the last decision
    meter: RateMeter = field(default_factory=RateMeter)


@dataclass(frozen=True)
class Rules:
    """What an admitter's settings make of every tick."""

    owner: str                  # who this admitter is (published with the status)
    lease_ms: int
    abandon_ms: int             # ONSALE_QUEUE_ABANDON_SECONDS
    claim_ms: int               # ONSALE_ADMISSION_CLAIM_SECONDS
    idle_ms: int                # ONSALE_SHOPPER_IDLE_SECONDS
    targets: Targets
    control_seconds: float


# ---- actions (what to do next) ---------------------------------------------


@dataclass(frozen=True)
class AcquireLease:
    ttl_ms: int


@dataclass(frozen=True)
class ReadStatus:
    pass


@dataclass(frozen=True)
class Sweep:
    fence: int
    now_ms: int
    grace_ms: int
    claim_ms: int
    idle_ms: int


@dataclass(frozen=True)
class Draw:
    fence: int


@dataclass(frozen=True)
class CountPrequeue:
    pass


@dataclass(frozen=True)
class MergePrequeue:
    fence: int


@dataclass(frozen=True)
class ReadHealth:
    active: int
    cap: int


@dataclass(frozen=True)
class Admit:
    fence: int
    n: int
    now_ms: int
    grace_ms: int
    cap: int


@dataclass(frozen=True)
class Publish:
    fields: StatusFields


Action = (AcquireLease | ReadStatus | Sweep | Draw | CountPrequeue | MergePrequeue
          | ReadHealth | Admit | Publish)


# ---- answers (what came back) ----------------------------------------------


@dataclass(frozen=True)
class Leased:
    fence: int                  # 0: another admitter holds the lease
    now: float                  # monotonic seconds, when the lease answered
    wall: float                 # unix seconds, the same moment


@dataclass(frozen=True)
class Drawn:
    pass


@dataclass(frozen=True)
class DrawWaiting:
    """The draw waits for its committed beacon round (the pre-queue is closed)."""


@dataclass(frozen=True)
class Prequeue:
    size: int


@dataclass(frozen=True)
class Merged:
    pass


@dataclass(frozen=True)
class Published:
    pass


Answer = (Leased | Status | Swept | Drawn | DrawWaiting | Prequeue | Merged | Health | Admitted
          | Published)


class EventStep:
    """One event's part of one tick. ``run`` is what carries over to the next tick:
    the event's state while this admitter holds its lease, None when it does not."""

    def __init__(self, run: EventRun | None, config: EventConfig, rules: Rules) -> None:
        self.run = run
        self.config = config
        self.rules = rules
        self._lease = Leased(0, 0.0, 0.0)
        self._occupied = 0

    def start(self) -> Action:
        return AcquireLease(self.rules.lease_ms)

    def feed(self, answer: Answer) -> Action | None:
        match answer:
            case Leased():
                return self._leased(answer)
            case Status():
                self.run = EventRun(fence=self._lease.fence, last=self._lease.now,
                                    rate=float(self.config.rate_min),
                                    drawn=answer.draw == "drawn")
                return self._sweep()
            case Swept():
                return self._swept(answer)
            case Drawn():
                self._run.drawn = True
                return self._control()
            case DrawWaiting():  # nobody is admitted before the draw: say so, and end
                return Publish({**self._stamp(), "state": "drawing",
                                "paused": int(self.config.paused), "rate": self._run.rate,
                                "measured": 0})
            case Prequeue():
                if answer.size:
                    return MergePrequeue(self._lease.fence)
                self._run.merged = True
                return self._control()
            case Merged():
                self._run.merged = True
                return self._control()
            case Health():
                return self._decide(answer)
            case Admitted():
                return self._admitted(answer)
            case Published():
                return None

    @property
    def _run(self) -> EventRun:
        if self.run is None:
            raise RuntimeError("the step was fed out of order: no lease yet")
        return self.run

    @property
    def _now_ms(self) -> int:
        return int(self._lease.wall * 1000)

    def _leased(self, lease: Leased) -> Action | None:
        self._lease = lease
        if lease.fence == 0:  # another admitter's event: forget what we knew
            self.run = None
            return None
        if self.run is None or self.run.fence != lease.fence:
            return ReadStatus()  # a new lease: was the draw done under an earlier one?
        return self._sweep()

    def _sweep(self) -> Sweep:
        rules = self.rules
        return Sweep(self._lease.fence, self._now_ms, rules.abandon_ms, rules.claim_ms,
                     rules.idle_ms)

    def _swept(self, swept: Swept) -> Action:
        run, config = self._run, self.config
        self._occupied = swept.active + swept.pending
        if config.policy == PASSTHROUGH or not config.sale_open(self._lease.wall):
            run.last = self._lease.now
            return Publish({**self._stamp(),
                            "state": PASSTHROUGH if config.policy == PASSTHROUGH else "waiting",
                            "paused": int(config.paused), "rate": run.rate, "measured": 0})
        if config.policy == RANDOM and not run.drawn:
            return Draw(self._lease.fence)
        if config.policy == FIFO and not run.merged:
            if not run.drawn:
                return CountPrequeue()
            run.merged = True  # a draw placed the pre-queue already
        return self._control()

    def _control(self) -> Action:
        """The controller every ``control_seconds``; an operator's pause at once."""
        run, config = self._run, self.config
        if (run.decision is None or self._lease.now - run.controlled >= self.rules.control_seconds
                or config.paused):
            return ReadHealth(active=self._occupied, cap=config.cap)
        if not config.rate_min <= run.rate <= config.rate_max:
            run.rate = min(config.rate_max, max(config.rate_min, run.rate))
            run.decision = Decision(run.rate, run.decision.state, run.decision.reasons)
        return self._admit(run.decision)

    def _decide(self, health: Health) -> Admit:
        run, config = self._run, self.config
        run.health = health
        run.decision = decide(run.rate, health, Bounds(config.rate_min, config.rate_max),
                              self.rules.targets, operator_paused=config.paused)
        run.rate, run.controlled = run.decision.rate, self._lease.now
        return self._admit(run.decision)

    def _admit(self, decision: Decision) -> Admit:
        run, config, now = self._run, self.config, self._lease.now
        budget = admit_budget(rate_per_min=decision.rate, elapsed=now - run.last,
                              carry=run.carry, cap=config.cap, occupied=self._occupied,
                              paused=not decision.admitting)
        run.last, run.carry = now, budget.carry
        return Admit(self._lease.fence, budget.admit, self._now_ms, self.rules.abandon_ms,
                     config.cap)

    def _admitted(self, admitted: Admitted) -> Publish:
        run = self._run
        decision = run.decision
        if decision is None:
            raise RuntimeError("the step was fed out of order: nothing was admitted")
        run.admitted += len(admitted.accounts)
        run.meter.record(self._lease.now, run.admitted)
        return Publish({**self._stamp(), "state": decision.state,
                        "paused": int(not decision.admitting), "rate": f"{decision.rate:.3f}",
                        "measured": f"{run.meter.per_minute():.3f}",
                        "reason": "; ".join(decision.reasons)})

    def _stamp(self) -> StatusFields:
        return {"updated": f"{self._lease.wall:.3f}", "owner": self.rules.owner}
