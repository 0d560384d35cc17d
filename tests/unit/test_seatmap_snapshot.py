"""seatmap.snapshot: the in-memory seat map and its compact, gzip-compressed document."""

from __future__ import annotations

import gzip
import json
import random
from datetime import UTC, datetime

import pytest

from onsale.seatmap.snapshot import (
    AVAILABLE,
    BLOCKED,
    HELD,
    PAYMENT_PENDING,
    SOLD,
    SeatMap,
    SnapshotError,
    decode,
    encode,
    encode_gzip,
    expiry_seconds,
    visible,
)


def test_expiries_round_up_to_whole_seconds() -> None:
    assert expiry_seconds("2030-01-02 03:04:05+00") == 1893553445
    assert expiry_seconds("2030-01-02 03:04:05.000001+00") == 1893553446
    assert expiry_seconds(datetime(2030, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)) == 1893553446
    assert expiry_seconds(None) is None


def test_only_held_seats_show_an_expiry() -> None:
    assert visible("HELD", "2030-01-02 03:04:05+00") == (HELD, 1893553445)
    assert visible("PAYMENT_PENDING", "2030-01-02 03:04:05+00") == (PAYMENT_PENDING, None)
    assert visible("SOLD", None) == (SOLD, None)
    with pytest.raises(KeyError):
        visible("LOST", None)


def test_set_reports_visible_changes_only() -> None:
    m = SeatMap(1)
    assert m.set(3, AVAILABLE, None)
    assert m.seat_count == 3 and m.get(1) == (BLOCKED, None)  # a gap is not for sale
    assert not m.set(3, AVAILABLE, None)
    assert m.set(3, HELD, 100) and m.get(3) == (HELD, 100)
    assert not m.set(3, HELD, 100)
    assert m.set(3, HELD, 101)
    assert m.set(3, SOLD, 555) and m.get(3) == (SOLD, None) and m.expires == {}
    assert m.get(99) == (BLOCKED, None)
    with pytest.raises(ValueError):
        m.set(0, AVAILABLE, None)


def test_document_is_one_digit_per_seat_plus_delta_coded_holds() -> None:
    m = SeatMap(7, version=0x1_0000_00A0)
    for seat in range(1, 11):
        m.set(seat, AVAILABLE, None)
    m.set(2, HELD, 1000)
    m.set(3, HELD, 990)
    m.set(9, HELD, 1200)
    m.set(5, SOLD, None)
    doc = json.loads(encode(m))
    assert doc == {"type": "snapshot", "event_id": 7, "version": "1/A0", "seat_count": 10,
                   "status": "0110300010", "held": [2, 1000, 1, -10, 6, 210]}


def test_round_trip_plain_and_gzip() -> None:
    rng = random.Random(5)
    m = SeatMap(3, version=123456789)
    for seat in range(1, 2001):
        code = rng.choice([AVAILABLE, AVAILABLE, HELD, PAYMENT_PENDING, SOLD, BLOCKED])
        m.set(seat, code, 1_800_000_000 + rng.randrange(300) if code == HELD else None)
    for body in (encode(m), encode_gzip(m)):
        back = decode(body)
        assert (back.event_id, back.version, back.status, back.expires) == (
            m.event_id, m.version, m.status, m.expires)
    assert gzip.decompress(encode_gzip(m)) == encode(m)


def test_fifty_thousand_seats_compress_far_below_64_kib() -> None:
    rng = random.Random(1)
    m = SeatMap(1, version=1)
    for seat in range(1, 50_001):
        r = rng.random()
        if r < 0.3:
            m.set(seat, SOLD, None)
        elif r < 0.4:
            m.set(seat, HELD, 1_800_000_000 + rng.randrange(300))
        elif r < 0.45:
            m.set(seat, PAYMENT_PENDING, None)
        else:
            m.set(seat, AVAILABLE, None)
    assert len(encode(m)) < 100_000
    assert len(encode_gzip(m)) < 64 * 1024


@pytest.mark.parametrize("body", [
    b"{}", b"not json", b'{"event_id":1,"version":"0/1","seat_count":2,"status":"05","held":[]}',
    b'{"event_id":1,"version":"0/1","seat_count":3,"status":"05","held":[]}',
    b'{"event_id":1,"version":"0/1","seat_count":2,"status":"00","held":[1]}',
    b'{"event_id":1,"version":"0/1","seat_count":2,"status":"00","held":[1,5]}',
    b'{"event_id":1,"version":"x","seat_count":2,"status":"00","held":[]}',
])
def test_bad_documents_are_refused(body: bytes) -> None:
    with pytest.raises(SnapshotError):
        decode(body)
