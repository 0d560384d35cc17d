"""One event's seat statuses in memory, and their compact snapshot encoding.

In memory a seat map is one ASCII digit per seat (``status[seat_id - 1]``)
plus the expiry of each HELD seat. The snapshot is that same byte string in
a small JSON document (docs/seatmap-protocol.md):

    {"type": "snapshot", "event_id": 7, "version": "0/1A2B3C", "seat_count": 50000,
     "status": "0000310...", "held": [3, 1795956240, 1, 0, 4, -12]}

``status`` is one character per seat; ``held`` lists the HELD seats in seat
order as pairs (seat id, expiry), each number the difference from the
previous pair's (the first pair is absolute): expiries are Unix seconds,
rounded up, so a client may show a lapsed hold as available. ``ga`` lists the
available places of each general-admission stripe as ``[tier_id, stripe,
available]`` (a tier's places left are the sum over its stripes; absent: no
GA tiers). The document is stored and served gzip-compressed.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from onsale.core.seat_state import SeatState
from onsale.seatmap.pgoutput import format_lsn, parse_lsn

AVAILABLE, HELD, PAYMENT_PENDING, SOLD, BLOCKED = 0, 1, 2, 3, 4
STATUS_CODES: dict[str, int] = {
    SeatState.AVAILABLE: AVAILABLE, SeatState.HELD: HELD,
    SeatState.PAYMENT_PENDING: PAYMENT_PENDING, SeatState.SOLD: SOLD, SeatState.BLOCKED: BLOCKED}
_DIGIT = 0x30  # status codes are stored as the ASCII digits "0".."4"
_ABSENT = _DIGIT + BLOCKED  # a gap in the seat ids reads as not for sale

# One seat's visible state: (seat_id, status code, expiry in Unix seconds or None).
Change = tuple[int, int, int | None]
# One GA stripe's available places: (tier_id, stripe, available).
PlaceChange = tuple[int, int, int]


class SnapshotError(ValueError):
    """A snapshot document that does not decode."""


def expiry_seconds(value: datetime | str | None) -> int | None:
    """A hold deadline as whole Unix seconds, rounded up (never earlier than the database's)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return math.ceil(value.timestamp())


def visible(status: str, expires: datetime | str | None) -> tuple[int, int | None]:
    """What a seat map shows of a row: its code, and the expiry for HELD seats only
    (a PAYMENT_PENDING seat is never shown available, whatever its deadline)."""
    code = STATUS_CODES[status]
    return code, expiry_seconds(expires) if code == HELD else None


@dataclass
class SeatMap:
    event_id: int
    version: int = 0
    status: bytearray = field(default_factory=bytearray)
    expires: dict[int, int] = field(default_factory=dict)
    places: dict[tuple[int, int], int] = field(default_factory=dict)  # (tier, stripe) -> available

    @property
    def seat_count(self) -> int:
        return len(self.status)

    def get(self, seat_id: int) -> tuple[int, int | None]:
        if not 0 < seat_id <= len(self.status):
            return BLOCKED, None
        return self.status[seat_id - 1] - _DIGIT, self.expires.get(seat_id)

    def set(self, seat_id: int, code: int, expires: int | None) -> bool:
        """Set one seat; False when nothing visible changed."""
        if seat_id <= 0:
            raise ValueError(f"seat ids start at 1, got {seat_id}")
        if code != HELD:
            expires = None
        if seat_id > len(self.status):
            self.status.extend(b"%c" % _ABSENT * (seat_id - len(self.status)))
        elif self.get(seat_id) == (code, expires):
            return False
        self.status[seat_id - 1] = _DIGIT + code
        if expires is None:
            self.expires.pop(seat_id, None)
        else:
            self.expires[seat_id] = expires
        return True

    def apply(self, changes: list[Change]) -> None:
        for seat_id, code, expires in changes:
            self.set(seat_id, code, expires)

    def set_places(self, tier_id: int, stripe: int, available: int) -> bool:
        """One GA stripe's available places; False when unchanged."""
        if self.places.get((tier_id, stripe)) == available:
            return False
        self.places[(tier_id, stripe)] = available
        return True

    def apply_places(self, changes: list[PlaceChange]) -> None:
        for tier_id, stripe, available in changes:
            self.set_places(tier_id, stripe, available)

    def places_left(self) -> dict[int, int]:
        """Each GA tier's places left: the sum over its stripes."""
        left: dict[int, int] = {}
        for (tier_id, _), available in self.places.items():
            left[tier_id] = left.get(tier_id, 0) + available
        return left

    def copy(self) -> SeatMap:
        return SeatMap(self.event_id, self.version, bytearray(self.status), dict(self.expires),
                       dict(self.places))

    def document(self) -> dict[str, Any]:
        held: list[int] = []
        prev_seat = prev_exp = 0
        for seat_id in sorted(self.expires):
            exp = self.expires[seat_id]
            held += (seat_id - prev_seat, exp - prev_exp)
            prev_seat, prev_exp = seat_id, exp
        doc: dict[str, Any] = {
            "type": "snapshot", "event_id": self.event_id, "version": format_lsn(self.version),
            "seat_count": len(self.status), "status": self.status.decode("ascii"), "held": held}
        if self.places:
            doc["ga"] = [[t, s, a] for (t, s), a in sorted(self.places.items())]
        return doc


def encode(seat_map: SeatMap) -> bytes:
    """The snapshot document as compact JSON bytes."""
    return json.dumps(seat_map.document(), separators=(",", ":")).encode()


def encode_gzip(seat_map: SeatMap) -> bytes:
    return gzip.compress(encode(seat_map), compresslevel=6, mtime=0)


def decode(body: bytes) -> SeatMap:
    """A SeatMap from a snapshot document (plain or gzip-compressed)."""
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    try:
        doc = json.loads(body)
        status = bytearray(doc["status"].encode("ascii"))
        held = doc["held"]
        seat_map = SeatMap(int(doc["event_id"]), parse_lsn(doc["version"]), status)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeError) as exc:
        raise SnapshotError(f"not a seat-map snapshot: {exc}") from None
    if len(status) != doc.get("seat_count") or status.strip(b"01234"):
        raise SnapshotError("status must be one digit 0-4 per seat")
    if not isinstance(held, list) or len(held) % 2:
        raise SnapshotError("held must be a flat list of (seat, expiry) pairs")
    seat = exp = 0
    for i in range(0, len(held), 2):
        seat, exp = seat + int(held[i]), exp + int(held[i + 1])
        if seat_map.get(seat)[0] != HELD:
            raise SnapshotError(f"seat {seat} has an expiry but is not HELD")
        seat_map.expires[seat] = exp
    try:
        for tier_id, stripe, available in doc.get("ga", []):
            seat_map.places[(int(tier_id), int(stripe))] = int(available)
    except (ValueError, TypeError) as exc:
        raise SnapshotError(f"ga must be a list of [tier, stripe, available]: {exc}") from None
    return seat_map
