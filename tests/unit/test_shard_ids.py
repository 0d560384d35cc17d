"""onsale.kernel.shard_ids: an id names its shard."""

from __future__ import annotations

import uuid

import pytest

from onsale.kernel.shard_ids import MAX_SHARD, Stamping, created_ms, shard_of, stamp

# A UUIDv7 made at 2025-12-02 09:52:46.720 UTC (1764669166720 ms since the epoch).
MADE = uuid.UUID("019ade7a-9480-7123-8abc-def012345678")


def test_the_timestamp_is_read_from_the_first_six_bytes() -> None:
    assert created_ms(MADE) == 0x019ADE7A9480


def test_a_stamped_id_names_its_shard_and_keeps_the_rest() -> None:
    stamped = stamp(MADE, 3)
    assert str(stamped) == "019ade7a-9480-7123-8abc-0003" + "12345678"
    assert shard_of(stamped, Stamping()) == 3
    assert stamped.version == 7 and stamped.variant == uuid.RFC_4122
    assert shard_of(stamp(MADE, MAX_SHARD), Stamping()) == MAX_SHARD


def test_an_id_from_before_the_stamping_is_the_first_shards() -> None:
    since = Stamping(first_shard=1, since_ms=created_ms(MADE) + 1)
    assert shard_of(MADE, since) == 1            # its bytes 10-11 say 0xdef0: ignored
    assert shard_of(stamp(MADE, 2), since) == 1  # older than the stamping: still the first
    at = Stamping(first_shard=1, since_ms=created_ms(MADE))
    assert shard_of(stamp(MADE, 2), at) == 2


def test_what_no_shard_made_is_shard_zero() -> None:
    assert shard_of(uuid.UUID(int=0), Stamping()) == 0
    assert shard_of(uuid.uuid4(), Stamping()) == 0
    raw = bytearray(MADE.bytes)
    raw[10:12] = b"\x80\x00"  # 32768: past the smallint
    assert shard_of(uuid.UUID(bytes=bytes(raw)), Stamping()) == 0
    raw[10:12] = b"\x00\x00"
    assert shard_of(uuid.UUID(bytes=bytes(raw)), Stamping()) == 0


@pytest.mark.parametrize("bad", [0, -1, MAX_SHARD + 1])
def test_a_shard_number_out_of_range_is_refused(bad: int) -> None:
    with pytest.raises(ValueError):
        stamp(MADE, bad)
