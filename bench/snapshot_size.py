"""Seat-map snapshot sizes for realistic worst cases (issue 5: < 64 KiB gzip for 50,000 seats).

    .venv/bin/python bench/snapshot_size.py [--seats 50000] [--seed 1] [--smoke]

Builds seat maps in memory and encodes them exactly as the cdc process stores
them (``seatmap.snapshot.encode_gzip``); no server needed. A hold is 1 to 6
adjacent seats (``max_seats_per_hold`` is 6) sharing one expiry, and
expiries lie within the hold TTL window. The scenarios:

  all-held-300    every seat held, holds of 1-6 adjacent seats, each hold its own
                  expiry spread over a 300 s window (the default hold TTL)
  all-held-3600   the same over 3600 s (the longest hold TTL an event may have)
  end-of-sale     groups of 1-6 adjacent seats: 75 % sold, 5 % in payment, 15 %
                  held (expiries over 300 s), 4 % available, 1 % blocked
  held-heavy      the same groups: 70 % held (expiries over 3600 s), 20 % sold,
                  5 % in payment, 5 % available
  mid-sale        30 % sold, 5 % in payment, 15 % held, the rest available
                  (the figure bench/seatmap.py prints)
  per-seat-300    not realistic, for reference: every seat held with its own
                  expiry (six-seat holds scattered so no two seats of a hold are
                  neighbours), over 300 s

Figure lines (bench/figures.py): each scenario's gzip size against the 64 KiB target.
Exit 1 when a realistic one is over it (``--smoke``: always 0, the unit test
tests/unit/test_seatmap_snapshot_size.py asserts the sizes).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from pathlib import Path

# The repository root first: run as a script, bench/ is on the path and its
# seatmap.py would shadow the seatmap package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from onsale.seatmap.snapshot import (
    AVAILABLE,
    BLOCKED,
    HELD,
    PAYMENT_PENDING,
    SOLD,
    SeatMap,
    encode,
    encode_gzip,
)

BASE = 1_800_000_000  # the earliest expiry, Unix seconds
LIMIT = 64 * 1024
MAX_HOLD = 6


def grouped(seats: int, seed: int, window: int,
            mix: tuple[tuple[int, float], ...]) -> SeatMap:
    """Seats 1..``seats`` in consecutive groups of 1-6, each group one status drawn
    from ``mix`` ((code, cumulative probability), ...); a HELD group is one hold
    with one expiry in [BASE, BASE + window), never the previous hold's (so each run
    of seats with one expiry is one hold)."""
    rng = random.Random(seed)
    m = SeatMap(1, version=1)
    seat = 1
    previous = None
    while seat <= seats:
        size, r = rng.randint(1, MAX_HOLD), rng.random()
        code = next((c for c, upto in mix if r < upto), AVAILABLE)
        expiry = None
        if code == HELD:
            while expiry is None or expiry == previous:
                expiry = BASE + rng.randrange(window)
            previous = expiry
        for s in range(seat, min(seats, seat + size - 1) + 1):
            m.set(s, code, expiry)
        seat += size
    return m


def all_held(seats: int, seed: int, window: int) -> SeatMap:
    return grouped(seats, seed, window, ((HELD, 1.0),))


def end_of_sale(seats: int, seed: int) -> SeatMap:
    return grouped(seats, seed, 300, ((SOLD, 0.75), (PAYMENT_PENDING, 0.80), (HELD, 0.95),
                                      (AVAILABLE, 0.99), (BLOCKED, 1.0)))


def held_heavy(seats: int, seed: int) -> SeatMap:
    return grouped(seats, seed, 3600, ((SOLD, 0.20), (PAYMENT_PENDING, 0.25), (HELD, 0.95)))


def mid_sale(seats: int, seed: int) -> SeatMap:
    return grouped(seats, seed, 300, ((SOLD, 0.30), (PAYMENT_PENDING, 0.35), (HELD, 0.50)))


def per_seat(seats: int, seed: int, window: int) -> SeatMap:
    rng = random.Random(seed)
    m = SeatMap(1, version=1)
    for s in range(1, seats + 1):
        m.set(s, HELD, BASE + rng.randrange(window))
    return m


SCENARIOS: dict[str, Callable[[int, int], SeatMap]] = {
    "all-held-300": lambda seats, seed: all_held(seats, seed, 300),
    "all-held-3600": lambda seats, seed: all_held(seats, seed, 3600),
    "end-of-sale": end_of_sale,
    "held-heavy": held_heavy,
    "mid-sale": mid_sale,
    "per-seat-300": lambda seats, seed: per_seat(seats, seed, 300),
}
REALISTIC = ("all-held-300", "all-held-3600", "end-of-sale", "held-heavy", "mid-sale")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seats", type=int, default=50_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--smoke", action="store_true", help="report only (bench/smoke.py)")
    args = p.parse_args()
    print(f"{'scenario':<15} {'held':>7} {'raw B':>9} {'gzip B':>8} {'gzip KiB':>9}  < 64 KiB")
    worst = 0
    sizes: dict[str, int] = {}
    for name, build in SCENARIOS.items():
        m = build(args.seats, args.seed)
        raw, gz = len(encode(m)), len(encode_gzip(m))
        if name in REALISTIC:
            worst = max(worst, gz)
        print(f"{name:<15} {len(m.expires):>7,} {raw:>9,} {gz:>8,} {gz / 1024:>9.1f}  "
              f"{'yes' if gz < LIMIT else 'NO'}{'' if name in REALISTIC else ' (not realistic)'}")
        sizes[name] = gz
    print(f"largest realistic snapshot: {worst / 1024:.1f} KiB gzip")
    for name, gz in sizes.items():
        figure(f"snapshot.{name.replace('-', '_')}_gzip", round(gz / 1024, 2), "KiB",
               target=LIMIT / 1024)
    figure("snapshot.largest_realistic_gzip", round(worst / 1024, 2), "KiB",
           target=LIMIT / 1024)
    return 0 if worst < LIMIT or args.smoke else 1


if __name__ == "__main__":
    raise SystemExit(main())
