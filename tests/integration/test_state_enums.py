"""The state enums in core name exactly what the migrated database allows.

Each state column's CHECK constraint is read back from the catalogue
(pg_constraint, pg_get_constraintdef) and its values must equal the enum's;
the payment outcomes are the values onsale_payment_apply compares its
p_outcome with. A state added in SQL but not in Python (or the reverse) fails
here, not in production. The parser is tests/check_constraints.py (its unit
tests: tests/unit/test_state_enums.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Any

import asyncpg
import pytest

from onsale.core.hold_state import HoldState
from onsale.core.order_state import OrderState
from onsale.core.payment_state import OperationStatus, PaymentOutcome, PaymentStatus
from onsale.core.seat_state import SeatState
from onsale.embedded import EmbeddedPostgres
from tests.check_constraints import allowed_values, compared_values, mismatch
from tests.conftest import fresh_database

# (table, column) -> the enum that names its states.
STATE_COLUMNS: dict[tuple[str, str], type[StrEnum]] = {
    ("seat_inventory", "status"): SeatState,
    ("holds", "status"): HoldState,
    ("orders", "status"): OrderState,
    ("orders", "payment_status"): PaymentStatus,
    ("payment_operations", "status"): OperationStatus,
}

# The CHECK constraints on exactly this one column, and those of its type if
# the type is a domain (then the column is called VALUE in the definition).
_CHECKS = """
SELECT 'column' AS source, pg_get_constraintdef(k.oid, $3) AS def
FROM pg_constraint k
JOIN pg_attribute a ON a.attrelid = k.conrelid
WHERE k.contype = 'c' AND k.conrelid = $1::regclass AND a.attname = $2
  AND k.conkey = ARRAY[a.attnum]
UNION ALL
SELECT 'domain', pg_get_constraintdef(k.oid, $3)
FROM pg_constraint k
JOIN pg_attribute a ON a.atttypid = k.contypid
WHERE k.contype = 'c' AND a.attrelid = $1::regclass AND a.attname = $2
"""


@pytest.fixture(scope="module")
async def catalogue(pg: EmbeddedPostgres, template_db: str) -> AsyncIterator[Any]:
    conn = await asyncpg.connect(await fresh_database(pg, template_db))
    try:
        yield conn
    finally:
        await conn.close()


async def _allowed(conn: Any, table: str, column: str, pretty: bool) -> tuple[str, ...]:
    rows = await conn.fetch(_CHECKS, table, column, pretty)
    assert len(rows) == 1, f"{table}.{column}: expected one CHECK listing its states, got " \
                           f"{[r['def'] for r in rows]}"
    name = column if rows[0]["source"] == "column" else "VALUE"
    return allowed_values(rows[0]["def"], name)


@pytest.mark.parametrize("pretty", [False, True], ids=["plain", "pretty"])
@pytest.mark.parametrize(("table", "column"), list(STATE_COLUMNS),
                         ids=[f"{t}.{c}" for t, c in STATE_COLUMNS])
async def test_each_state_check_allows_exactly_the_enum(
        catalogue: Any, table: str, column: str, pretty: bool) -> None:
    allowed = await _allowed(catalogue, table, column, pretty)
    enum = STATE_COLUMNS[(table, column)]
    assert mismatch(allowed, enum) is None, \
        f"{table}.{column} vs {enum.__name__}: {mismatch(allowed, enum)}"
    assert len(set(allowed)) == len(allowed)


async def test_payment_apply_handles_exactly_the_payment_outcomes(catalogue: Any) -> None:
    sources = await catalogue.fetch(
        "SELECT prosrc FROM pg_proc WHERE proname = 'onsale_payment_apply'"
        " AND pronamespace = 'public'::regnamespace")
    assert len(sources) == 1
    handled = compared_values(sources[0]["prosrc"], "p_outcome")
    assert mismatch(handled, PaymentOutcome) is None, mismatch(handled, PaymentOutcome)

