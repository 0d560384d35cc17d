"""Pure venue layout generation: sections, rows, seats, tiers and a best-seat rank.

The layout of a generated event is an arc of sections facing a stage at the
origin. Seat ids are 1..N in (section, row, number) order. ``rank`` orders
seats from best (centre, front) to worst and drives best-available.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

DEFAULT_TIERS: tuple[tuple[str, int], ...] = (
    ("Premium", 15000),
    ("Standard", 9000),
    ("Value", 4500),
)


@dataclass(frozen=True)
class Seat:
    seat_id: int
    section: str
    row_label: str
    number: int
    x: float
    y: float
    tier_id: int
    rank: int


def _row_label(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, rem = divmod(i - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


def _shape(total: int) -> tuple[int, int, int]:
    """(sections, rows per section, seats per row) covering ``total`` seats."""
    sections = max(1, min(20, round(math.sqrt(total / 125))))
    per_section = math.ceil(total / sections)
    seats_per_row = max(1, min(50, round(math.sqrt(per_section * 2))))
    rows = math.ceil(per_section / seats_per_row)
    return sections, rows, seats_per_row


def generate(total: int, tiers: int = len(DEFAULT_TIERS)) -> list[Seat]:
    if total < 1:
        raise ValueError("an event needs at least one seat")
    if tiers < 1:
        raise ValueError("an event needs at least one price tier")
    sections, rows, per_row = _shape(total)
    spread = math.pi * 0.9
    pitch = 1.1  # metres between seat centres in a row
    # The front row of each section spans its share of the arc plus an aisle,
    # so neighbouring sections never overlap.
    base_radius = max(10.0, sections * (per_row * pitch + 2.0) / spread)
    scored: list[tuple[float, int, str, str, int, float, float, int]] = []
    seat_id = 0
    for s in range(sections):
        angle = -spread / 2 + spread * (s + 0.5) / sections
        centrality = abs(s + 0.5 - sections / 2) / max(1.0, sections / 2)
        for r in range(rows):
            radius = base_radius + r * 1.2
            for n in range(per_row):
                if seat_id == total:
                    break
                seat_id += 1
                offset = (n - (per_row - 1) / 2) * pitch
                x = radius * math.sin(angle) + offset * math.cos(angle)
                y = radius * math.cos(angle) - offset * math.sin(angle)
                depth = r / max(1, rows - 1) if rows > 1 else 0.0
                aisle = abs(n - (per_row - 1) / 2) / max(1.0, per_row / 2)
                score = depth * 0.6 + centrality * 0.3 + aisle * 0.1
                tier = min(tiers - 1, int(depth * tiers)) if tiers > 1 else 0
                scored.append((score, seat_id, f"S{s + 1}", _row_label(r), n + 1,
                               round(x, 2), round(y, 2), tier + 1))
    order = sorted(range(len(scored)), key=lambda i: (scored[i][0], scored[i][1]))
    rank = [0] * len(scored)
    for position, i in enumerate(order):
        rank[i] = position + 1
    return [
        Seat(seat_id=t[1], section=t[2], row_label=t[3], number=t[4], x=t[5], y=t[6],
             tier_id=t[7], rank=rank[i])
        for i, t in enumerate(scored)
    ]


def venue_document(
    event_id: int, seats: list[Seat], tiers: list[dict[str, Any]],
) -> tuple[str, str]:
    """The static layout served to browsers, columnar to stay small, and its etag."""
    doc = {
        "event_id": event_id,
        "seat_count": len(seats),
        "tiers": tiers,
        "columns": ["seat_id", "section", "row", "number", "x", "y", "tier_id"],
        "seats": {
            "seat_id": [s.seat_id for s in seats],
            "section": [s.section for s in seats],
            "row": [s.row_label for s in seats],
            "number": [s.number for s in seats],
            "x": [s.x for s in seats],
            "y": [s.y for s in seats],
            "tier_id": [s.tier_id for s in seats],
        },
    }
    body = json.dumps(doc, separators=(",", ":"))
    etag = hashlib.sha256(body.encode()).hexdigest()[:32]
    return body, etag
