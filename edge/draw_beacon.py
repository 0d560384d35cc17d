"""The beacon round a random draw waits for (docs/edge.md#a-draw-nobody-can-predict).

When the sale opens, a draw whose event committed to a beacon round closes its
pre-queue, then waits until the round is due and a relay has it (``beacon_relay``,
checked against the chain's key), records it once (``record_beacon_outcome``: the
round, or the operator's fallback to the seed alone if that came first), and only then
draws and reveals the seed. While it waits, every tick asks whether to try the relays
again: not before the round is due, then at most every ``RETRY_SECONDS`` per event.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from onsale.edge.beacon import Round
from onsale.edge.beacon_relay import fetch_round
from onsale.edge.queries import queries
from onsale.kernel.beacon_chain import Chain, committed_chain, round_to_draw

log = logging.getLogger("onsale.beacon")
RETRY_SECONDS = 1.0

Fetch = Callable[[Sequence[str], Chain, int], Awaitable[Round | None]]


@dataclass(frozen=True)
class Waiting:
    """The round is not published yet (or no relay answers): the draw waits."""

    round: int


def outcome_of(found: Round) -> dict[str, Any]:
    """A fetched, checked round as the draw document records it."""
    return {"round": found.number, "signature": found.signature,
            "previous_signature": found.previous_signature,
            "randomness": found.randomness.hex()}


class BeaconWait:
    """Per edge process: when each waiting draw may ask the relays again."""

    def __init__(self, relays: Sequence[str], fetch: Fetch = fetch_round,
                 clock: Callable[[], float] = time.time) -> None:
        self.relays = list(relays)
        self._fetch = fetch
        self._clock = clock
        self._next: dict[int, float] = {}

    async def outcome(self, conn: Any, event_id: int, secret: Any,
                      closed_at: datetime) -> dict[str, Any] | Waiting | None:
        """What the draw mixes in: None (no beacon committed), the recorded outcome (a
        round, or the operator's fallback), or ``Waiting``."""
        committed, recorded = secret["beacon_commitment"], secret["beacon_outcome"]
        if committed is None:
            return None
        if recorded is not None:
            return dict(recorded)
        chain = committed_chain(committed)
        number = round_to_draw(committed, closed_at.timestamp())
        now = self._clock()
        if now < max(chain.time_of(number), self._next.get(event_id, 0.0)):
            return Waiting(number)
        found = await self._fetch(self.relays, chain, number)
        if found is None:
            if event_id not in self._next:
                log.info("event %s: the draw waits for %s round %d", event_id, chain.name,
                         number)
            self._next[event_id] = now + RETRY_SECONDS
            return Waiting(number)
        self._next.pop(event_id, None)
        stands = await conn.fetchval(queries("queue")["record_beacon_outcome"], event_id,
                                     outcome_of(found))
        return None if stands is None else dict(stands)
