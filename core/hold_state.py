"""The states of a hold: ``holds.status``.

The database's CHECK constraint on that column is the authority; this enum is
its Python name, and tests/integration/test_state_enums.py requires the two to
list the same values (in the constraint's order, which the API documents).
"""

from __future__ import annotations

from enum import StrEnum


class HoldState(StrEnum):
    HELD = "HELD"
    PAYMENT_PENDING = "PAYMENT_PENDING"
    CONFIRMED = "CONFIRMED"
    RELEASED = "RELEASED"
    EXPIRED = "EXPIRED"
