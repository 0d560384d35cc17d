"""A committed beacon round, fetched from drand's HTTP relays and checked before use.

``GET {relay}/{chain hash}/public/{round}`` answers ``{"round", "randomness",
"signature", "previous_signature"}`` once the chain has published the round (before,
drand answers 425 or 404). Each answer is checked against the chain's public key
(``edge.beacon.verify``, in a thread: 0.17 s of pure-Python pairing), so a relay can
withhold a round but never change a draw; a relay that answers something else is
logged and the next one asked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import httpx

from onsale.edge.beacon import BeaconError, Round, verify
from onsale.kernel.beacon_chain import Chain

log = logging.getLogger("onsale.beacon")
TIMEOUT = httpx.Timeout(5.0)


def parse_round(body: Any, number: int) -> Round | None:
    """The round a relay answered, if it is shaped like one and is round ``number``."""
    if not isinstance(body, dict):
        return None
    try:
        found = Round(int(body["round"]), str(body["signature"]),
                      str(body.get("previous_signature") or ""))
    except (KeyError, TypeError, ValueError):
        return None
    return found if found.number == number else None


async def fetch_round(relays: Sequence[str], chain: Chain, number: int,
                      transport: httpx.AsyncBaseTransport | None = None) -> Round | None:
    """Round ``number`` of ``chain``, checked; None while no relay has it (not published
    yet, or no relay reachable)."""
    async with httpx.AsyncClient(timeout=TIMEOUT, transport=transport) as client:
        for relay in relays:
            url = f"{relay}/{chain.hash}/public/{number}"
            try:
                answer = await client.get(url)
            except httpx.HTTPError as exc:
                log.warning("beacon relay %s: %s", relay, exc)
                continue
            if answer.status_code != 200:
                continue  # 404 or 425: not published yet
            try:
                found = parse_round(answer.json(), number)
            except ValueError:
                found = None
            if found is None:
                log.warning("beacon relay %s answered something other than round %d", relay,
                            number)
                continue
            try:
                await asyncio.to_thread(verify, chain, found)
            except BeaconError as exc:
                log.error("beacon relay %s answered a round that is not %s's: %s", relay,
                          chain.name, exc)
                continue
            return found
    return None
