"""onsale_ga_move locks the stripes of its holds' places first, in key order, and no
other (issue 22, part 5: scripts/mutants.py's survivors of that lock's predicate): a
sale or a return of places does not wait for another hold's stripes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, audit_clean
from tests.integration.test_payment_paths import (
    apply,
    available,
    locked_elsewhere,
    past_deadline,
    paying,
    state,
)


@pytest.mark.parametrize("outcome", ["AUTHORIZED", "DECLINED"], ids=["sold", "returned"])
async def test_a_ga_move_waits_for_no_other_holds_stripes(
        api: Api, conn: Any, db_url: str, outcome: str) -> None:
    """Every stripe but the one the hold's places are on (the decoy event's, where
    another hold has a place, and the event's other tier) is locked by a transaction
    in flight; the sale, or the return after a decline past the deadline, still
    completes without waiting."""
    p = await paying(api, conn, ga=True)
    if outcome == "DECLINED":
        await past_deadline(conn, p)
    others = ("SELECT 1 FROM ga_buckets WHERE NOT (event_id = $1 AND tier_id = 2) "
              "ORDER BY event_id, tier_id, stripe FOR UPDATE", (p.event_id,))
    assert await conn.fetchval("SELECT count(*) FROM ga_hold_places WHERE hold_id <> $1 "
                               "AND status = 'HELD'", p.hold_id) == 1  # the decoy's
    async with locked_elsewhere(db_url, conn, others):
        result = await apply(conn, p.operation_id, outcome, failure="card_declined")
    if outcome == "AUTHORIZED":
        assert result["order_status"] == "CONFIRMED"
        assert await state(conn, p) == ("CONFIRMED", "CONFIRMED", "AUTHORIZED",
                                        ["SOLD", "SOLD"])
    else:
        assert await state(conn, p) == ("EXPIRED", "FAILED", "DECLINED",
                                        ["RETURNED", "RETURNED"])
        assert await available(conn, p) == 10
    await audit_clean(conn)
