"""The states of an order: ``orders.status`` (its payment has its own, in
core/payment_state.py).

The database's CHECK constraint on that column is the authority; this enum is
its Python name, and tests/integration/test_state_enums.py requires the two to
list the same values.
"""

from __future__ import annotations

from enum import StrEnum


class OrderState(StrEnum):
    PENDING = "PENDING"
    CONFIRMED = "CONFIRMED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
