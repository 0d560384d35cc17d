"""Which shard holds a row, from its id alone (docs/scaling.md#an-id-names-its-shard).

A hold, order, payment operation or ticket id is a UUIDv7 made by its shard's
database (``onsale_new_id()``), with the shard's number written into two bytes of
its random part: bytes 10 and 11, after the variant bits. Any process reads the
shard back from the id, with no directory query and no question to every shard.

Ids made before the shards existed carry no number. They are all on the first
shard, and all older than the moment that shard began stamping (its
``stamped_since``), which the UUIDv7 timestamp in the id's first six bytes shows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

MAX_SHARD = 32767  # a smallint, > 0


@dataclass(frozen=True)
class Stamping:
    """Where unstamped ids live: on ``first_shard``, if made before ``since_ms``
    (milliseconds since the epoch, the first shard's ``stamped_since``)."""

    first_shard: int = 1
    since_ms: int = 0


def stamp(value: uuid.UUID, shard_id: int) -> uuid.UUID:
    """``value`` with ``shard_id`` in bytes 10 and 11 (as ``onsale_new_id()`` does)."""
    if not 1 <= shard_id <= MAX_SHARD:
        raise ValueError(f"a shard id is 1 to {MAX_SHARD}, got {shard_id}")
    raw = bytearray(value.bytes)
    raw[10:12] = shard_id.to_bytes(2, "big")
    return uuid.UUID(bytes=bytes(raw))


def created_ms(value: uuid.UUID) -> int:
    """The UUIDv7 timestamp: milliseconds since the epoch."""
    return int.from_bytes(value.bytes[:6], "big")


def shard_of(value: uuid.UUID, stamping: Stamping) -> int:
    """The shard that made ``value``; 0 when the id cannot be one of ours (not a
    UUIDv7, or a number no shard has), which the caller answers as not found."""
    if value.version != 7:
        return 0
    if created_ms(value) < stamping.since_ms:
        return stamping.first_shard
    shard_id = int.from_bytes(value.bytes[10:12], "big")
    return shard_id if 1 <= shard_id <= MAX_SHARD else 0
