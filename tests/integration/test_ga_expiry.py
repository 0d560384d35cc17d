"""The expiry fences of general admission (issue 22, part 5): an expiry gives back only
the places of the hold it names, and only while that hold is HELD past its deadline.

GA places are counts, not seats: a newer hold never takes over an old hold's place rows
(ga_hold_places, one per hold and stripe); it takes from the stripe's ``available``. So
the fence that ``si.hold_id`` is for seats is, for places, the hold ids an expiry hands
to onsale_ga_move (``h.hold_id = ANY (v_due)`` in onsale_sweep, ``ARRAY[p_hold_id]`` and
its gate in onsale_expire_hold) and ``p.hold_id = ANY (p_hold_ids)`` in onsale_ga_move
itself. The case those exist for is the same as for seats: two holds on the same stripe,
both past their deadline, neither swept yet, when the sweep or the old hold's late
message arrives. Their places are all alike, so the counts are the evidence: the
number returned, each hold's place rows, the stripe's held and available, and each
return's record of the hold it came from (ga_releases)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.conftest import Api, audit_clean
from tests.integration.test_ga_holds import floor, ga_event


async def _ga_hold(conn: Any, event_id: int, quantity: int, account: uuid.UUID) -> uuid.UUID:
    """A GA hold on tier 1, as the hold route would make it (one stripe: no spread)."""
    row = await conn.fetchrow(
        "SELECT * FROM onsale_ga_hold($1, $2, $3, 'd', 1::smallint, $4, false)",
        event_id, account, uuid.uuid4().hex, quantity)
    assert row["status_code"] == 201, dict(row)
    return uuid.UUID(row["body"]["hold_id"])


async def _expire(conn: Any, hold_id: uuid.UUID, ago: str) -> None:
    await conn.execute("UPDATE holds SET expires_at = now() - $2::text::interval "
                       "WHERE hold_id = $1", hold_id, ago)


async def _both_expired(api: Api, conn: Any) -> tuple[int, uuid.UUID, uuid.UUID]:
    """An old GA hold of 2 places and a newer one of 3 on the same (only) stripe of the
    Floor tier, both past their deadline (the old one the earlier), neither swept yet.
    Around them: a live hold of 1 place made first (the first row of ``holds``: a
    return that read the hold's state from another hold would read this one's), and a
    second tier, Balcony, whose stripe 0 must never count the Floor's places."""
    event_id = await ga_event(api, floor(capacity=10, stripes=1),
                              {"name": "Balcony", "price_minor": 3000, "capacity": 5},
                              seats=0, max_tickets_per_account=10)
    await _ga_hold(conn, event_id, 1, await api.account(conn))
    old_id = await _ga_hold(conn, event_id, 2, await api.account(conn))
    await _expire(conn, old_id, "2 s")
    new_id = await _ga_hold(conn, event_id, 3, await api.account(conn))
    await _expire(conn, new_id, "1 s")
    return event_id, old_id, new_id


async def _places(conn: Any, hold_id: uuid.UUID) -> tuple[str, int]:
    row = await conn.fetchrow("SELECT h.status, coalesce(sum(p.quantity) FILTER ("
                              "WHERE p.status = 'HELD'), 0) AS held "
                              "FROM holds h LEFT JOIN ga_hold_places p ON p.hold_id = h.hold_id "
                              "WHERE h.hold_id = $1 GROUP BY h.status", hold_id)
    return row["status"], row["held"]


async def _stripe(conn: Any, event_id: int) -> tuple[int, int]:
    row = await conn.fetchrow("SELECT available, held FROM ga_buckets "
                              "WHERE event_id = $1 AND tier_id = 1 AND stripe = 0", event_id)
    return row["available"], row["held"]


async def _returned(conn: Any, event_id: int) -> dict[uuid.UUID, int]:
    """The places each hold gave back on expiry; each return records the state and
    deadline its own hold had just before."""
    rows = await conn.fetch("SELECT hold_id, sum(quantity) AS n FROM ga_releases "
                            "WHERE event_id = $1 AND reason = 'expired' GROUP BY hold_id",
                            event_id)
    assert await conn.fetchval(
        "SELECT count(*) FROM ga_releases r JOIN holds h ON h.hold_id = r.hold_id "
        "WHERE r.event_id = $1 AND (r.prior_hold_status <> 'HELD' "
        "OR r.prior_expires_at IS DISTINCT FROM h.expires_at)", event_id) == 0
    return {r["hold_id"]: r["n"] for r in rows}


async def _balcony(conn: Any, event_id: int) -> tuple[int, int]:
    row = await conn.fetchrow("SELECT available, held FROM ga_buckets "
                              "WHERE event_id = $1 AND tier_id = 2 AND stripe = 0", event_id)
    return row["available"], row["held"]


async def test_a_sweep_of_an_old_ga_hold_leaves_the_newer_expired_hold_alone(
        api: Api, conn: Any) -> None:
    """A batch of one takes the oldest deadline first: the old hold. Without
    ``h.hold_id = ANY (v_due)`` in onsale_sweep (or ``p.hold_id = ANY (p_hold_ids)`` in
    onsale_ga_move) it would give back the newer hold's places too, outside the batch."""
    event_id, old_id, new_id = await _both_expired(api, conn)
    first = await conn.fetchrow("SELECT * FROM onsale_sweep(1)")
    assert (first["holds_expired"], first["seats_released"]) == (1, 2)
    assert await _places(conn, old_id) == ("EXPIRED", 0)
    assert await _places(conn, new_id) == ("HELD", 3)
    assert await _stripe(conn, event_id) == (6, 4)
    assert await _returned(conn, event_id) == {old_id: 2}
    await audit_clean(conn)
    second = await conn.fetchrow("SELECT * FROM onsale_sweep(1)")
    assert (second["holds_expired"], second["seats_released"]) == (1, 3)
    assert await _places(conn, new_id) == ("EXPIRED", 0)
    assert await _stripe(conn, event_id) == (9, 1)  # the live hold's place
    assert await _balcony(conn, event_id) == (5, 0)
    assert await _returned(conn, event_id) == {old_id: 2, new_id: 3}
    await audit_clean(conn)


async def test_a_late_expiry_of_an_old_ga_hold_leaves_the_newer_expired_hold_alone(
        api: Api, conn: Any) -> None:
    """The old hold's late message gives back its own 2 places, not the newer hold's 3,
    though the newer hold is past its deadline too."""
    event_id, old_id, new_id = await _both_expired(api, conn)
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", old_id) == 2
    assert await _places(conn, old_id) == ("EXPIRED", 0)
    assert await _places(conn, new_id) == ("HELD", 3)
    assert await _stripe(conn, event_id) == (6, 4)
    assert await _returned(conn, event_id) == {old_id: 2}
    await audit_clean(conn)
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", old_id) == 0  # a duplicate
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", new_id) == 3
    assert await _stripe(conn, event_id) == (9, 1)
    assert await _balcony(conn, event_id) == (5, 0)
    assert await _returned(conn, event_id) == {old_id: 2, new_id: 3}
    await audit_clean(conn)


async def test_a_duplicated_move_moves_nothing_twice(api: Api, conn: Any) -> None:
    """onsale_ga_move moves only place rows still in the state it moves them from: the
    same return delivered twice (a retried call) changes no count the second time."""
    event_id, old_id, _ = await _both_expired(api, conn)
    move = "SELECT onsale_ga_move($1, 'HELD', 'RETURNED', 'expired')"
    assert await conn.fetchval(move, [old_id]) == 2
    assert await conn.fetchval(move, [old_id]) == 0
    assert await _stripe(conn, event_id) == (6, 4)
    assert await _returned(conn, event_id) == {old_id: 2}
    await audit_clean(conn)  # past its deadline, a hold may have given its places back


async def test_an_early_expiry_message_returns_nothing_of_a_live_ga_hold(
        api: Api, conn: Any) -> None:
    """A message for a GA hold still before its deadline changes nothing, even while
    another GA hold of the tier is past its own (onsale_expire_hold's gate must name
    this hold and judge its own deadline)."""
    event_id = await ga_event(api, floor(capacity=10, stripes=1), seats=0,
                              max_tickets_per_account=10)
    expired = await _ga_hold(conn, event_id, 2, await api.account(conn))
    await _expire(conn, expired, "1 s")
    live = await _ga_hold(conn, event_id, 3, await api.account(conn))
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", live) == 0
    assert await _places(conn, live) == ("HELD", 3)
    assert await _places(conn, expired) == ("HELD", 2)  # not its message
    assert await _stripe(conn, event_id) == (5, 5)
    await audit_clean(conn)
    # A sweep ends the expired one only.
    swept = await conn.fetchrow("SELECT * FROM onsale_sweep(10)")
    assert (swept["holds_expired"], swept["seats_released"]) == (1, 2)
    assert await _places(conn, live) == ("HELD", 3)
    await audit_clean(conn)


async def test_a_late_expiry_leaves_a_ga_hold_in_payment_alone(api: Api, conn: Any) -> None:
    """A GA hold's places stay counted as HELD while it is in payment (places have no
    PAYMENT_PENDING of their own), so past its deadline, within its grace, only the
    hold's status keeps a late message and the sweep away from them; the payment then
    still sells them."""
    event_id = await ga_event(api, floor(capacity=10, stripes=1), seats=0,
                              max_tickets_per_account=10)
    account = await api.account(conn)
    hold_id = await _ga_hold(conn, event_id, 3, account)
    begun = await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, 'pay', 'd', 'card_4242', 600, 0, 30)",
        hold_id, account)
    await _expire(conn, hold_id, "1 s")  # the hold's deadline passed; its grace has not
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", hold_id) == 0
    swept = await conn.fetchrow("SELECT * FROM onsale_sweep(10)")
    assert (swept["holds_expired"], swept["seats_released"]) == (0, 0)
    assert await _places(conn, hold_id) == ("PAYMENT_PENDING", 3)
    assert await _stripe(conn, event_id) == (7, 3)
    await audit_clean(conn)
    result = await conn.fetchval(
        "SELECT onsale_payment_apply($1, 'AUTHORIZED', 'pi_ga', NULL, NULL, 'test', 5)",
        begun["operation_id"])
    assert result["order_status"] == "CONFIRMED", result
    assert await conn.fetchval("SELECT sold FROM ga_buckets WHERE event_id = $1", event_id) == 3
    await audit_clean(conn)


@pytest.mark.parametrize(("offset", "returned"), [("0", 3), ("1 microsecond", 0)])
@pytest.mark.parametrize("expiry", ["message", "sweep", "next_hold"])
async def test_a_ga_expiry_at_the_exact_deadline_returns_the_places_and_not_before(
        api: Api, conn: Any, expiry: str, offset: str, returned: int) -> None:
    """now() is fixed inside a transaction: a deadline of exactly now() is over, for the
    late message, the sweep and a hold attempt that finds the tier short (which ends
    the tier's expired holds itself, onsale_ga_expire_due); one microsecond before it,
    none of them touches the places."""
    event_id = await ga_event(api, floor(capacity=3, stripes=1), seats=0,
                              max_tickets_per_account=10)
    hold_id = await _ga_hold(conn, event_id, 3, await api.account(conn))
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() + $2::text::interval "
                           "WHERE hold_id = $1", hold_id, offset)
        if expiry == "message":
            assert await conn.fetchval("SELECT onsale_expire_hold($1)", hold_id) == returned
        elif expiry == "sweep":
            swept = await conn.fetchrow("SELECT * FROM onsale_sweep(10)")
            assert (swept["holds_expired"], swept["seats_released"]) == (returned // 3,
                                                                         returned)
        else:  # sold out in its counters: the attempt spreads, and ends the expired hold
            account = await api.account(conn)
            for spread in (False, True):
                row = await conn.fetchrow(
                    "SELECT * FROM onsale_ga_hold($1, $2, 'k', 'd', 1::smallint, 1, $3)",
                    event_id, account, spread)
                if row["status_code"] != 0:
                    break
            assert row["status_code"] == (201 if returned else 409), dict(row)
        assert await _places(conn, hold_id) == (("EXPIRED", 0) if returned else ("HELD", 3))
    await audit_clean(conn)


async def test_onsale_ga_move_refuses_what_is_not_a_move(api: Api, conn: Any) -> None:
    """Places move HELD to SOLD or RETURNED, or SOLD to RETURNED; the guard refuses
    anything else before a count changes (a caller's slip would otherwise create or
    destroy places)."""
    import asyncpg

    event_id, old_id, _ = await _both_expired(api, conn)
    for p_from, p_to in (("RETURNED", "SOLD"), ("HELD", "AVAILABLE"), ("SOLD", "SOLD")):
        with pytest.raises(asyncpg.RaiseError, match="is not a move"):
            await conn.fetchval("SELECT onsale_ga_move($1, $2, $3, 'expired')",
                                [old_id], p_from, p_to)
    assert await _stripe(conn, event_id) == (4, 6)
    await audit_clean(conn)


async def test_a_short_ga_tier_ends_only_its_own_expired_holds(api: Api, conn: Any) -> None:
    """A hold attempt that finds its tier sold out ends the tier's expired holds itself
    (onsale_ga_expire_due): those of this event and this tier only, and never a hold in
    payment, whose places are still counted as HELD though its deadline has passed."""
    event_id = await ga_event(api, floor(capacity=3, stripes=1),
                              {"name": "Balcony", "price_minor": 3000, "capacity": 5},
                              seats=0, max_tickets_per_account=10)
    other_event = await ga_event(api, floor(capacity=3, stripes=1), seats=0)
    expired = await _ga_hold(conn, event_id, 2, await api.account(conn))
    payer = await api.account(conn)
    paying = await _ga_hold(conn, event_id, 1, payer)
    await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, 'pay', 'd', 'card_4242', 600, 0, 30)",
        paying, payer)
    balcony = (await conn.fetchrow(
        "SELECT * FROM onsale_ga_hold($1, $2, 'b', 'd', 2::smallint, 1, false)",
        event_id, await api.account(conn)))["body"]["hold_id"]
    elsewhere = await _ga_hold(conn, other_event, 1, await api.account(conn))
    for hold_id in (expired, paying, uuid.UUID(balcony), elsewhere):
        await _expire(conn, hold_id, "1 s")
    account = await api.account(conn)
    for spread in (False, True):  # the Floor is sold out in its counters: spread
        row = await conn.fetchrow(
            "SELECT * FROM onsale_ga_hold($1, $2, 'k', 'd', 1::smallint, 2, $3)",
            event_id, account, spread)
        if row["status_code"] != 0:
            break
    assert row["status_code"] == 201, dict(row)
    assert await _places(conn, expired) == ("EXPIRED", 0)
    assert await _places(conn, paying) == ("PAYMENT_PENDING", 1)
    assert await _places(conn, uuid.UUID(balcony)) == ("HELD", 1)  # expired, not swept
    assert await _places(conn, elsewhere) == ("HELD", 1)
    assert await _stripe(conn, event_id) == (0, 3)
    await audit_clean(conn)
