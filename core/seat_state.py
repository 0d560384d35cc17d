"""The states of a seat for sale: ``seat_inventory.status``.

The database's CHECK constraint on that column is the authority; this enum is
its Python name, and tests/integration/test_state_enums.py requires the two to
list the same values. Members are strings, so they compare equal to what
asyncpg returns and serialise to JSON as their value.
"""

from __future__ import annotations

from enum import StrEnum


class SeatState(StrEnum):
    AVAILABLE = "AVAILABLE"
    HELD = "HELD"
    PAYMENT_PENDING = "PAYMENT_PENDING"
    SOLD = "SOLD"
    BLOCKED = "BLOCKED"
