"""onsale_hold_best called directly, one row or many, beside what every other test
missed (docs/invariants.md#mutation-testing): a decoy event whose same seats are free,
a section that is not the best one, seats held past their deadline (free) next to
seats in payment past theirs (not free), a hold at exactly its deadline, and a
sold-out event."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import pytest

from tests.conftest import Api

BEST = ("SELECT status_code, body FROM onsale_hold_best($1, $2, $3, 'd', $4, $5, $6)")


async def best(conn: Any, event_id: int, account: uuid.UUID, quantity: int,
               section: str | None = None, together: bool = False
               ) -> tuple[int, dict[str, Any]]:
    row = await conn.fetchrow(BEST, event_id, account, uuid.uuid4().hex, quantity, section,
                              together)
    body = row["body"]
    return row["status_code"], json.loads(body) if isinstance(body, str) else body


async def ranked(conn: Any, event_id: int) -> list[tuple[int, str]]:
    """(seat id, section) from the best-ranked seat down."""
    rows = await conn.fetch("SELECT seat_id, section FROM seats WHERE event_id = $1 "
                            "ORDER BY rank", event_id)
    return [(r["seat_id"], r["section"]) for r in rows]


async def take(conn: Any, event_id: int, seat_ids: list[int], how: str) -> None:
    """Mark seats as another shopper left them: sold, held (live or past its deadline),
    or in payment past the hold's deadline (the payment grace)."""
    if how == "sold":
        await conn.execute("UPDATE seat_inventory SET status = 'SOLD', order_id = "
                           "gen_random_uuid() WHERE event_id = $1 AND seat_id = ANY ($2)",
                           event_id, seat_ids)
        return
    status = "PAYMENT_PENDING" if how == "paying" else "HELD"
    deadline = "now() - interval '1 minute'" if how in ("expired", "paying") else (
        "now() + interval '5 minutes'")
    await conn.execute(f"UPDATE seat_inventory SET status = '{status}', hold_id = "
                       f"gen_random_uuid(), hold_expires_at = {deadline} "
                       "WHERE event_id = $1 AND seat_id = ANY ($2)", event_id, seat_ids)


def seat_ids(body: dict[str, Any]) -> list[int]:
    return sorted(s["seat_id"] for s in body["seats"])


@pytest.mark.parametrize("together", [False, True])
async def test_the_best_seats_are_this_events_free_ones(api: Api, conn: Any,
                                                         together: bool) -> None:
    await api.create_event(seats=120, max_tickets_per_account=10)  # a decoy: all free
    event_id = await api.create_event(seats=120, max_tickets_per_account=10)
    order = [s for s, _ in await ranked(conn, event_id)]
    await take(conn, event_id, order[:30], "sold")
    status, body = await best(conn, event_id, await api.account(conn), 2, None, together)
    assert status == 201, body
    assert not set(seat_ids(body)) & set(order[:30])


@pytest.mark.parametrize("together", [False, True])
async def test_a_section_asked_for_is_the_section_given(api: Api, conn: Any,
                                                         together: bool) -> None:
    event_id = await api.create_event(seats=600, max_tickets_per_account=10)
    order = await ranked(conn, event_id)
    sections = {section for _, section in order}
    assert len(sections) >= 2
    other = next(section for _, section in reversed(order) if section != order[0][1])
    status, body = await best(conn, event_id, await api.account(conn), 2, other, together)
    assert status == 201, body
    assert {s["section"] for s in body["seats"]} == {other}


@pytest.mark.parametrize("together", [False, True])
async def test_held_past_the_deadline_is_free_and_in_payment_is_not(
        api: Api, conn: Any, together: bool) -> None:
    event_id = await api.create_event(seats=120, max_tickets_per_account=10)
    order = [s for s, _ in await ranked(conn, event_id)]
    # The best seats in payment past their hold's deadline (the payment grace): not free.
    await take(conn, event_id, order[:40], "paying")
    status, body = await best(conn, event_id, await api.account(conn), 2, None, together)
    assert status == 201, body
    assert not set(seat_ids(body)) & set(order[:40])
    # Then every seat held by a hold past its deadline (not swept yet): free again.
    await conn.execute("UPDATE seat_inventory SET status = 'AVAILABLE', hold_id = NULL, "
                       "hold_expires_at = NULL WHERE event_id = $1", event_id)
    await take(conn, event_id, order, "expired")
    status, body = await best(conn, event_id, await api.account(conn), 2, None, together)
    assert status == 201, body


@pytest.mark.parametrize("together", [False, True])
async def test_a_hold_at_exactly_its_deadline_has_ended(api: Api, conn: Any,
                                                        together: bool) -> None:
    event_id = await api.create_event(seats=120, max_tickets_per_account=10)
    account = await api.account(conn)
    async with conn.transaction():  # now() is the transaction's: the deadline is now
        await conn.execute("UPDATE seat_inventory SET status = 'HELD', hold_id = "
                           "gen_random_uuid(), hold_expires_at = now() WHERE event_id = $1",
                           event_id)
        status, body = await best(conn, event_id, account, 2, None, together)
        assert status == 201, body


@pytest.mark.parametrize("together", [False, True])
async def test_a_sold_out_event_is_a_plain_409(api: Api, conn: Any, together: bool) -> None:
    event_id = await api.create_event(seats=20, max_tickets_per_account=10)
    await take(conn, event_id, list(range(1, 21)), "sold")
    status, body = await best(conn, event_id, await api.account(conn), 2, None, together)
    assert (status, body["code"]) == (409, "seats_unavailable")


async def test_together_passes_over_rows_whose_free_seats_are_never_adjacent(
        api: Api, conn: Any) -> None:
    """Every other seat of every row but the last is in a live hold: the best rows have
    free seats, but no two side by side; the pair comes from the last row at once."""
    event_id = await api.create_event(seats=120, max_tickets_per_account=10)
    rows = await conn.fetch("SELECT seat_id, row_label, number, section FROM seats "
                            "WHERE event_id = $1 ORDER BY rank", event_id)
    last = (rows[-1]["section"], rows[-1]["row_label"])
    held = [r["seat_id"] for r in rows
            if (r["section"], r["row_label"]) != last and r["number"] % 2 == 0]
    await take(conn, event_id, held, "held")
    status, body = await best(conn, event_id, await api.account(conn), 2, None, True)
    assert status == 201, body
    assert {(s["section"], s["row"]) for s in body["seats"]} == {last}


async def test_together_tries_the_next_block_when_one_is_locked_elsewhere(
        api: Api, conn: Any, db_url: str) -> None:
    """The best block looks free, but another transaction has a seat of it locked (a
    shopper's hold in flight): that block is left out and the next one taken."""
    event_id = await api.create_event(seats=120, max_tickets_per_account=10)
    order = [s for s, _ in await ranked(conn, event_id)]
    other = await asyncpg.connect(db_url)
    try:
        async with other.transaction():
            await other.execute("SELECT 1 FROM seat_inventory WHERE event_id = $1 AND "
                                "seat_id = $2 FOR UPDATE", event_id, order[0])
            status, body = await best(conn, event_id, await api.account(conn), 2, None, True)
    finally:
        await other.close()
    assert status == 201, body
    assert order[0] not in seat_ids(body)
