"""The cost of reading a hold body through its schema (issue 26: msgspec against the
hand-written parser it replaced), in microseconds per body, on the bodies shoppers send.

    .venv/bin/python bench/request_bodies.py [--rounds 200000] [--smoke]

Three ways to read the same bytes, one after the other, in this process (no server):

  schema      ``msgspec.json.decode`` into ``core.request_bodies.HoldRequest``, then
              ``hold_rules.hold_request``: what ``POST /api/events/{id}/holds`` runs now
  by_hand     ``json.loads`` and the hand-written checks the route ran before (kept here,
              frozen, as the reference)
  json_only   ``json.loads`` alone: no validation at all (the ceiling: a path that does less)

Figure lines (bench/figures.py): the schema's microseconds per body beside ``json_only``
(ceiling) and beside ``by_hand`` (``request_bodies.by_hand_us``; their ratio is the
change). Less is better for all three.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from onsale.core import request_bodies as bodies
from onsale.core.hold_rules import hold_request
from onsale.kernel.bodies import decode

BODIES = [json.dumps(b).encode() for b in (
    {"seat_ids": [1201]}, {"seat_ids": [40211, 40212, 40213, 40214]},
    {"seat_ids": [9, 10, 11, 12, 13, 14]}, {"best_available": {"quantity": 2}},
    {"best_available": {"quantity": 4, "section": "A", "together": True}},
    {"ga": {"tier_id": 1, "quantity": 2}})]


def by_hand(raw: bytes) -> object:
    """The parser before issue 26 (core/hold_rules.py at 1e8f3da), frozen."""
    body = json.loads(raw)
    if not isinstance(body, dict):
        raise ValueError
    if sum(kind in body for kind in ("seat_ids", "best_available", "ga")) != 1:
        raise ValueError
    if "ga" in body:
        ga = body["ga"]
        if not isinstance(ga, dict) or set(ga) - {"tier_id", "quantity"}:
            raise ValueError
        tier_id, quantity = ga.get("tier_id"), ga.get("quantity")
        if type(tier_id) is not int or not 0 < tier_id <= 32_767:
            raise ValueError
        if type(quantity) is not int or not 1 <= quantity <= 100:
            raise ValueError
        return (tier_id, quantity)
    if "seat_ids" in body:
        ids = body["seat_ids"]
        if not isinstance(ids, list) or not ids or len(ids) > 100:
            raise ValueError
        if not all(type(i) is int and 0 < i <= 2**31 - 1 for i in ids):
            raise ValueError
        if len(set(ids)) != len(ids):
            raise ValueError
        return tuple(sorted(ids))
    best = body["best_available"]
    if not isinstance(best, dict):
        raise ValueError
    quantity = best.get("quantity")
    if type(quantity) is not int or not 1 <= quantity <= 100:
        raise ValueError
    section = best.get("section")
    if section is not None and (not isinstance(section, str) or not 0 < len(section) <= 50):
        raise ValueError
    together = best.get("together", False)
    if not isinstance(together, bool):
        raise ValueError
    return (quantity, section, together)


def schema(raw: bytes) -> object:
    return hold_request(decode(raw, bodies.HoldRequest, bodies.HOLD_CODES))


def json_only(raw: bytes) -> Any:
    return json.loads(raw)


def per_body_us(read: Callable[[bytes], object], rounds: int) -> float:
    """The best of five passes over ``rounds`` bodies, in microseconds per body."""
    best = float("inf")
    batch = (BODIES * (rounds // len(BODIES) + 1))[:rounds]
    for _ in range(5):
        started = time.perf_counter()
        for raw in batch:
            read(raw)
        best = min(best, time.perf_counter() - started)
    return best / rounds * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200_000)
    parser.add_argument("--smoke", action="store_true", help="a few thousand bodies")
    args = parser.parse_args()
    rounds = 6_000 if args.smoke else args.rounds
    for raw in BODIES:  # the three read the same meaning
        assert by_hand(raw) is not None and schema(raw) is not None
    timed = {name: per_body_us(read, rounds)
             for name, read in (("json_only", json_only), ("by_hand", by_hand),
                                ("schema", schema))}
    for name, us in timed.items():
        print(f"{name:>10}: {us:6.2f} us per body ({rounds:,} bodies, best of 5)")
    figure("request_bodies.schema_us", timed["schema"], "us",
                 ceiling=timed["json_only"])
    figure("request_bodies.by_hand_us", timed["by_hand"], "us",
                 ceiling=timed["json_only"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
