"""Whether an event may move to another shard now (docs/scaling.md#moving-an-event).
Pure: ``core.event_move`` reads the facts, asks, and does what the decision says.

An event moves only while nothing of its sale exists yet: no hold, no order, and its
queue more than ``MOVE_MARGIN`` away from opening. The margin outlasts the placement's
periodic reload (30 s), so by the time a shopper can be admitted every process routes
the event to its new shard, even one that missed the change's notification. The queue
opens at ``prequeue_at``, or at ``onsale_at`` for an event without a pre-queue (its
visitors may join before, but nobody is admitted and no hold is taken before
``onsale_at``, which the hold functions check on the shard).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

MOVE_MARGIN = timedelta(minutes=5)


class MoveVerdict(StrEnum):
    MOVE = "move"                    # copy, verify, switch, delete
    ALREADY_THERE = "already_there"  # placed on the target: only clear leftovers elsewhere
    REFUSED = "refused"


@dataclass(frozen=True)
class MoveFacts:
    now: datetime                # the directory's clock
    onsale_at: datetime
    prequeue_at: datetime | None
    source: int                  # the shard the placement names
    target: int
    target_state: str | None     # None: no such shard listed
    holds: int = 0               # on the source shard, in any state
    orders: int = 0


@dataclass(frozen=True)
class MoveDecision:
    verdict: MoveVerdict
    code: str | None = None      # the problem code when refused
    reasons: tuple[str, ...] = ()


# The HTTP status of each refusal (the route and the CLI map the code).
REFUSAL_STATUS = {"shard_not_found": 422, "shard_not_active": 409, "event_already_open": 409}


def queue_opens_at(onsale_at: datetime, prequeue_at: datetime | None) -> datetime:
    """When the event's queue opens (prequeue_at is never after onsale_at)."""
    return onsale_at if prequeue_at is None else min(prequeue_at, onsale_at)


def decide_move(facts: MoveFacts) -> MoveDecision:
    if facts.target_state is None:
        return MoveDecision(MoveVerdict.REFUSED, "shard_not_found",
                            (f"shard {facts.target} is not listed",))
    if facts.target == facts.source:
        return MoveDecision(MoveVerdict.ALREADY_THERE, None,
                            (f"the event is placed on shard {facts.target}",))
    if facts.target_state != "active":
        return MoveDecision(MoveVerdict.REFUSED, "shard_not_active",
                            (f"shard {facts.target} is {facts.target_state}",))
    reasons = []
    opens = queue_opens_at(facts.onsale_at, facts.prequeue_at)
    if facts.now + MOVE_MARGIN >= opens:
        reasons.append("its queue opens in less than 5 minutes" if facts.now < opens
                       else "its queue is open")
    if facts.holds:
        reasons.append(f"it has {facts.holds} hold(s)")
    if facts.orders:
        reasons.append(f"it has {facts.orders} order(s)")
    if reasons:
        return MoveDecision(MoveVerdict.REFUSED, "event_already_open", tuple(reasons))
    return MoveDecision(MoveVerdict.MOVE)
