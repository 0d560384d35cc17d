"""General admission over the API against real PostgreSQL: events with GA tiers, holds
by quantity across stripes, refusals, replays, expiry, release, stripes changed on sale
(docs/general-admission.md). Every scenario ends with the audit."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from onsale.core.metrics import Metrics
from onsale.core.sweeper import sweep_once
from tests.conftest import ADMIN_TOKEN, Api, audit_clean


async def ga_event(api: Api, *tiers: dict[str, Any], seats: int = 10, **body: Any) -> int:
    return await api.create_event(seats=seats, ga_tiers=list(tiers), **body)


def floor(capacity: int = 100, stripes: int = 4, **extra: Any) -> dict[str, Any]:
    return {"name": "Floor", "price_minor": 5000, "capacity": capacity, "stripes": stripes,
            **extra}


async def take(c: httpx.AsyncClient, event_id: int, quantity: int, tier_id: int = 1,
               key: str | None = None) -> httpx.Response:
    return await c.post(f"/api/events/{event_id}/holds",
                        json={"ga": {"tier_id": tier_id, "quantity": quantity}},
                        headers={"Idempotency-Key": key or uuid.uuid4().hex})


async def stripes(conn: Any, event_id: int, tier_id: int = 1) -> list[dict[str, Any]]:
    rows = await conn.fetch("SELECT stripe, available, held, sold FROM ga_buckets "
                            "WHERE event_id = $1 AND tier_id = $2 ORDER BY stripe",
                            event_id, tier_id)
    return [dict(r) for r in rows]


async def left(api: Api, event_id: int) -> list[int]:
    async with api.client() as c:
        doc = (await c.get(f"/api/events/{event_id}")).json()
    return [t["available"] for t in doc["ga_tiers"]]


async def test_an_event_lists_its_ga_tiers_with_what_is_left(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=10, stripes=4),
                              {"name": "Balcony", "price_minor": 3000, "capacity": 7})
    async with api.client() as c:
        doc = (await c.get(f"/api/events/{event_id}")).json()
    assert [(t["tier_id"], t["name"], t["capacity"], t["available"]) for t in doc["ga_tiers"]] \
        == [(1, "Floor", 10, 10), (2, "Balcony", 7, 7)]
    assert doc["seat_count"] == 10
    # The capacity is split over the stripes, the remainder on the first ones.
    assert [s["available"] for s in await stripes(conn, event_id)] == [3, 3, 2, 2]
    assert [s["available"] for s in await stripes(conn, event_id, 2)] == [7]
    await audit_clean(conn)


async def test_a_ga_only_event_has_no_seats(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=50), seats=0)
    async with api.client() as c:
        doc = (await c.get(f"/api/events/{event_id}")).json()
        venue = (await c.get(f"/api/events/{event_id}/venue")).json()
    assert doc["seat_count"] == 0 and venue["seat_count"] == 0
    async with api.client(await api.account(conn)) as c:
        r = await take(c, event_id, 2)
    assert r.status_code == 201, r.text
    await audit_clean(conn)


async def test_bad_ga_tiers_are_refused_at_creation(api: Api) -> None:
    for tiers, seats in (([{"name": "Floor", "price_minor": 100}], 10),  # no capacity
                         ([floor(stripes=65)], 10),
                         ([floor(), floor()], 10),  # two tiers of one name
                         ([floor(colour="red")], 10),
                         ("floor", 10)):
        r = await api.admin_post("/api/ops/events", {"name": "Bad", "seats": seats,
                                                     "ga_tiers": tiers})
        assert r.status_code == 400 and r.json()["code"] == "invalid_request", (tiers, r.text)
    r = await api.admin_post("/api/ops/events", {"name": "Nothing", "seats": 0})
    assert r.status_code == 400  # neither seats nor places


async def test_a_hold_takes_places_and_answers_like_a_seat_hold(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=20, stripes=4))
    me = await api.account(conn)
    async with api.client(me) as c:
        r = await take(c, event_id, 3, key="ga-1")
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["ga"] == {"tier_id": 1, "name": "Floor", "quantity": 3, "price_minor": 5000}
        assert body["seats"] == [] and body["amount_minor"] == 15000
        assert r.headers["location"] == f"/api/holds/{body['hold_id']}"
        again = await take(c, event_id, 3, key="ga-1")  # the same request, replayed
        assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
        assert again.json() == body
        other = await take(c, event_id, 2, key="ga-1")  # the key, another body
        assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
        got = (await c.get(f"/api/holds/{body['hold_id']}")).json()
        assert got["ga"] == body["ga"] and got["status"] == "HELD"
    counts = await stripes(conn, event_id)
    assert sum(s["held"] for s in counts) == 3 and sum(s["available"] for s in counts) == 17
    assert await conn.fetchval("SELECT count(*) FROM holds") == 1  # the replay made nothing
    assert await left(api, event_id) == [17]
    await audit_clean(conn)


async def test_a_hold_can_take_from_several_stripes(api: Api, conn: Any) -> None:
    # 4 stripes of 2: no stripe alone has 5 places; the hold takes them across stripes.
    event_id = await ga_event(api, floor(capacity=8, stripes=4, max_per_hold=6),
                              max_tickets_per_account=10)
    async with api.client(await api.account(conn)) as c:
        r = await take(c, event_id, 5)
    assert r.status_code == 201, r.text
    places = await conn.fetch("SELECT stripe, quantity FROM ga_hold_places WHERE hold_id = $1",
                              uuid.UUID(r.json()["hold_id"]))
    assert sum(p["quantity"] for p in places) == 5 and len(places) >= 3
    counts = {s["stripe"]: s for s in await stripes(conn, event_id)}
    for p in places:  # exactly what it took, stripe by stripe
        assert counts[p["stripe"]]["held"] == p["quantity"]
    await audit_clean(conn)


async def test_too_few_and_none_left_are_clean_409s(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=5, stripes=2), max_tickets_per_account=10)
    async with api.client(await api.account(conn)) as c:
        assert (await take(c, event_id, 4)).status_code == 201
        short = await take(c, event_id, 2)
        assert short.status_code == 409, short.text
        assert short.headers["content-type"] == "application/problem+json"
        assert (short.json()["code"], short.json()["available"], short.json()["requested"]) \
            == ("insufficient_quantity", 1, 2)
        assert (await take(c, event_id, 1)).status_code == 201
        gone = await take(c, event_id, 1)
        assert gone.status_code == 409 and gone.json()["code"] == "sold_out"
        assert gone.json()["available"] == 0
    assert await left(api, event_id) == [0]
    await audit_clean(conn)


async def test_bad_ga_requests_get_clear_errors(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(max_per_hold=4))
    async with api.client(await api.account(conn)) as c:
        for body, status, code in (
                ({"ga": {"tier_id": 1}}, 400, "invalid_quantity"),
                ({"ga": {"tier_id": 1, "quantity": 0}}, 400, "invalid_quantity"),
                ({"ga": {"tier_id": "1", "quantity": 1}}, 400, "invalid_quantity"),
                ({"ga": {"tier_id": 1, "quantity": 5}}, 400, "invalid_quantity"),  # > per hold
                ({"ga": {"tier_id": 9, "quantity": 1}}, 404, "ga_tier_not_found"),
                ({"ga": {"tier_id": 1, "quantity": 1}, "seat_ids": [1]}, 400, "invalid_seats")):
            r = await c.post(f"/api/events/{event_id}/holds", json=body,
                             headers={"Idempotency-Key": uuid.uuid4().hex})
            assert (r.status_code, r.json()["code"]) == (status, code), (body, r.text)
    assert await conn.fetchval("SELECT count(*) FROM holds") == 0
    await audit_clean(conn)


async def test_the_account_limits_count_places(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(max_per_account=3), max_tickets_per_account=5)
    me = await api.account(conn)
    async with api.client(me) as c:
        assert (await take(c, event_id, 2)).status_code == 201
        r = await take(c, event_id, 2)  # the tier's own limit: 3 places
        assert r.status_code == 409 and r.json()["code"] == "ticket_limit_exceeded"
        assert r.json()["limit"] == 3 and r.json()["owned"] == 2
        assert (await take(c, event_id, 1)).status_code == 201
        # Seats and places share the event's limit (5): 3 places + 2 seats, then no more.
        seats = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1, 2, 3]},
                             headers={"Idempotency-Key": uuid.uuid4().hex})
        assert seats.status_code == 409 and seats.json()["code"] == "ticket_limit_exceeded"
    await audit_clean(conn)


async def test_expiry_returns_places_once_and_a_late_sweep_changes_nothing(
        api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=6, stripes=2), hold_ttl_seconds=1,
                              max_tickets_per_account=10)
    async with api.client(await api.account(conn)) as c:
        old = (await take(c, event_id, 6)).json()
    await asyncio.sleep(1.2)
    # The tier looks sold out in its counters, but the expired hold gives its places
    # back to the next attempt (database time judges the deadline), before any sweep.
    async with api.client(await api.account(conn)) as c:
        new = await take(c, event_id, 4)
    assert new.status_code == 201, new.text
    status = await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1",
                                 uuid.UUID(old["hold_id"]))
    assert status == "EXPIRED"
    before = await stripes(conn, event_id)
    # A late sweep, and a replayed expiry of the old hold, move nothing.
    await sweep_once(conn, 100)
    assert await conn.fetchval("SELECT onsale_expire_hold($1)", uuid.UUID(old["hold_id"])) == 0
    assert await stripes(conn, event_id) == before
    assert sum(s["held"] for s in before) == 4 and sum(s["available"] for s in before) == 2
    returned = await conn.fetchval("SELECT sum(quantity) FROM ga_releases WHERE hold_id = $1",
                                   uuid.UUID(old["hold_id"]))
    assert returned == 6
    await audit_clean(conn)


async def test_the_sweeper_returns_expired_places(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=10, stripes=3), hold_ttl_seconds=1)
    async with api.client(await api.account(conn)) as c:
        hold = (await take(c, event_id, 3)).json()
    await asyncio.sleep(1.2)
    result = await sweep_once(conn, 100)
    assert (result.holds_expired, result.seats_released) == (1, 3)
    assert sum(s["available"] for s in await stripes(conn, event_id)) == 10
    assert await conn.fetchval("SELECT status FROM holds WHERE hold_id = $1",
                               uuid.UUID(hold["hold_id"])) == "EXPIRED"
    assert (await sweep_once(conn, 100)).seats_released == 0
    await audit_clean(conn)


async def test_release_gives_places_back_and_is_idempotent(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=10, stripes=2))
    me = await api.account(conn)
    async with api.client(me) as c:
        hold = (await take(c, event_id, 4)).json()
        for _ in range(2):
            r = await c.delete(f"/api/holds/{hold['hold_id']}")
            assert r.status_code == 200 and r.json()["status"] == "RELEASED"
    counts = await stripes(conn, event_id)
    assert sum(s["available"] for s in counts) == 10 and sum(s["held"] for s in counts) == 0
    reasons = await conn.fetch("SELECT reason, quantity FROM ga_releases")
    assert {r["reason"] for r in reasons} == {"released"}
    assert sum(r["quantity"] for r in reasons) == 4
    await audit_clean(conn)


async def test_stripes_change_on_sale_and_operators_see_them(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(capacity=40, stripes=2), max_tickets_per_account=10)
    me = await api.account(conn)
    async with api.client(me) as c:
        assert (await take(c, event_id, 5)).status_code == 201
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with api.client() as c:
        r = await c.patch(f"/api/ops/events/{event_id}/ga/1", json={"stripes": 5},
                          headers=auth)
        assert r.status_code == 200, r.text
        tier = r.json()["tier"]
        assert tier["stripes"] == 5 and len(tier["stripe_counts"]) == 5
        assert (tier["available"], tier["held"], tier["sold"]) == (35, 5, 0)
        assert [s["available"] for s in tier["stripe_counts"]] == [7, 7, 7, 7, 7]
        # Fewer stripes: the retired ones are drained, the places they hold stay put.
        r = await c.patch(f"/api/ops/events/{event_id}/ga/1", json={"stripes": 1},
                          headers=auth)
        tier = r.json()["tier"]
        assert [s["active"] for s in tier["stripe_counts"]] == [True] + [False] * 4
        assert tier["stripe_counts"][0]["available"] == 35
        assert all(s["available"] == 0 for s in tier["stripe_counts"][1:])
        report = (await c.get(f"/api/ops/events/{event_id}/ga", headers=auth)).json()
        assert report["ga_tiers"][0]["recent_rebalances"][0]["reason"] == "stripes_changed"
        r = await c.post(f"/api/ops/events/{event_id}/ga/1/rebalance", headers=auth)
        assert r.status_code == 200 and r.json()["moved"] == 0  # already even
        bad = await c.patch(f"/api/ops/events/{event_id}/ga/1", json={"stripes": 0},
                            headers=auth)
        assert bad.status_code == 400 and bad.json()["code"] == "invalid_request"
        missing = await c.get(f"/api/ops/events/{event_id}/ga/7", headers=auth)
        assert missing.status_code == 404 and missing.json()["code"] == "ga_tier_not_found"
        for path in ("ga/99999", "ga/x"):  # beyond a tier id's range, not a number
            for method, body in (("GET", None), ("PATCH", {"stripes": 2})):
                r = await c.request(method, f"/api/ops/events/{event_id}/{path}", json=body,
                                    headers=auth)
                assert (r.status_code, r.json()["code"]) == (404, "ga_tier_not_found"), r.text
            r = await c.post(f"/api/ops/events/{event_id}/{path}/rebalance", headers=auth)
            assert (r.status_code, r.json()["code"]) == (404, "ga_tier_not_found"), r.text
        denied = await c.get(f"/api/ops/events/{event_id}/ga")
        assert denied.status_code == 401
    async with api.client(me) as c:  # still sells, from the one active stripe
        assert (await take(c, event_id, 5)).status_code == 201
    await audit_clean(conn)


async def test_the_quota_plane_refills_a_stripe_that_ran_dry(api: Api, conn: Any) -> None:
    from onsale.core.ga_quota import rebalance_all

    event_id = await ga_event(api, floor(capacity=12, stripes=3, max_per_hold=4),
                              max_tickets_per_account=10)
    async with api.client(await api.account(conn)) as c:
        for _ in range(2):  # two holds of 4 empty two stripes at most
            assert (await take(c, event_id, 4)).status_code == 201
    before = await stripes(conn, event_id)
    assert min(s["available"] for s in before) == 0
    metrics = Metrics()
    moved = await rebalance_all(conn, metrics)
    after = await stripes(conn, event_id)
    assert moved > 0 and sorted(s["available"] for s in after) == [1, 1, 2]
    assert [s["held"] for s in after] == [s["held"] for s in before]  # only available moves
    assert await rebalance_all(conn, metrics) == 0  # even now: nothing to do
    await audit_clean(conn)


async def test_the_quota_plane_leaves_uneven_stripes_that_can_still_serve_a_hold(
        api: Api, conn: Any) -> None:
    """Only a stripe run dry (fewer than a hold may take) makes a pass move places: an
    operator's forced rebalance is not the loop's default."""
    from onsale.core.ga_quota import rebalance_all

    event_id = await ga_event(api, floor(capacity=40, stripes=2, max_per_hold=4),
                              max_tickets_per_account=10)
    async with api.client(await api.account(conn)) as c:
        assert (await take(c, event_id, 4)).status_code == 201
    before = await stripes(conn, event_id)
    assert sorted(s["available"] for s in before) == [16, 20]
    assert await rebalance_all(conn, Metrics()) == 0
    assert await stripes(conn, event_id) == before
    await audit_clean(conn)


async def test_a_rebalance_plan_must_pair_distinct_stripes_and_sum_to_zero(
        api: Api, conn: Any) -> None:
    import asyncpg

    event_id = await ga_event(api, floor(capacity=30, stripes=3))
    rebalance = ("SELECT onsale_ga_rebalance($1, 1::smallint, $2::smallint[], $3::integer[], "
                 "'t', 50)")
    for stripes_, deltas in (([0, 0, 1], [-5, -5, 10]), ([0, 1], [-5, 4]), ([0, 1, 2], [1, 1])):
        try:
            await conn.fetchval(rebalance, event_id, stripes_, deltas)
        except asyncpg.RaiseError:
            continue
        raise AssertionError(f"{stripes_} {deltas} was applied")
    assert await conn.fetchval(rebalance, event_id, [0, 1], [-20, 20]) == -1  # would go negative
    assert sum(s["available"] for s in await stripes(conn, event_id)) == 30
    await audit_clean(conn)


async def test_setting_a_tiers_stripes_touches_that_tier_of_that_event_only(
        api: Api, conn: Any) -> None:
    """A decoy event with the same tier numbers, and a second tier beside the one
    changed: each keeps its stripes. 1 and 64 stripes are allowed, 0 and 65 refused
    with invalid_request before anything is read. Issue 22, part 5 (scripts/mutants.py:
    onsale_ga_set_stripes)."""
    import asyncpg

    # The stripes to be added (2 and 3 of tier 2) exist already on the other tier, and
    # on tier 2 of the decoy: only this tier's own count as present.
    decoy = await ga_event(api, floor(capacity=10, stripes=2),
                           floor(capacity=10, stripes=4, name="Balcony"), seats=0)
    event_id = await ga_event(api, floor(capacity=10, stripes=4),
                              floor(capacity=10, stripes=2, name="Balcony"), seats=0)
    set_n = "SELECT onsale_ga_set_stripes($1, $2::smallint, $3::smallint)"

    async def shape(event: int, tier: int) -> tuple[int, list[int]]:
        n = await conn.fetchval("SELECT stripes FROM ga_tiers WHERE event_id = $1 "
                                "AND tier_id = $2", event, tier)
        return n, [s["stripe"] for s in await stripes(conn, event, tier)]

    assert await conn.fetchval(set_n, event_id, 2, 4) == 2  # the previous count
    assert await shape(event_id, 2) == (4, [0, 1, 2, 3])  # the new stripes exist
    assert await shape(event_id, 1) == (4, [0, 1, 2, 3])
    assert await shape(decoy, 2) == (4, [0, 1, 2, 3])
    assert await conn.fetchval(set_n, event_id, 2, 64) == 4
    assert (await shape(event_id, 2))[0] == 64
    assert await conn.fetchval(set_n, event_id, 2, 1) == 64
    assert (await shape(event_id, 2))[0] == 1
    assert await shape(decoy, 1) == (2, [0, 1])
    assert await shape(decoy, 2) == (4, [0, 1, 2, 3])
    assert await shape(event_id, 1) == (4, [0, 1, 2, 3])
    for n in (0, 65):
        with pytest.raises(asyncpg.PostgresError) as refused:
            await conn.fetchval(set_n, event_id, 2, n)
        exc: Any = refused.value
        assert (exc.sqlstate, str(exc.args[0])) == ("OS400", "invalid_request")
    assert sum(s["available"] for s in await stripes(conn, event_id, 2)) == 10
    await audit_clean(conn)


async def test_a_rebalance_moves_and_logs_its_own_tier_only(api: Api, conn: Any) -> None:
    """Beside a second tier and a decoy event whose stripes share the numbers (and have
    more, and fewer places): the plan is checked, applied and logged on its tier alone;
    a plan naming a stripe the tier lacks moves nothing; a plan of zeros touches no row
    and logs nothing. Issue 22, part 5 (scripts/mutants.py: onsale_ga_rebalance)."""
    import asyncpg

    event_id = await ga_event(api, floor(capacity=10, stripes=2),
                              floor(capacity=4, stripes=4, name="Balcony"), seats=0)
    decoy = await ga_event(api, floor(capacity=4, stripes=4), seats=0)
    rebalance = ("SELECT onsale_ga_rebalance($1, $2::smallint, $3::smallint[], "
                 "$4::integer[], 'test', 50)")

    async def rows(event: int, tier: int) -> list[tuple[int, int, int]]:
        return [(r["stripe"], r["available"], r["version"]) for r in await conn.fetch(
            "SELECT stripe, available, version FROM ga_buckets WHERE event_id = $1 "
            "AND tier_id = $2 ORDER BY stripe", event, tier)]

    others = (await rows(event_id, 2), await rows(decoy, 1))
    assert await conn.fetchval(rebalance, event_id, 1, [0, 1], [-4, 4]) == 4
    assert [(s, a) for s, a, _ in await rows(event_id, 1)] == [(0, 1), (1, 9)]
    assert (await rows(event_id, 2), await rows(decoy, 1)) == others
    log = await conn.fetchrow("SELECT tier_id, moved, before, after FROM ga_rebalances "
                              "WHERE event_id = $1", event_id)
    assert (log["tier_id"], log["moved"]) == (1, 4)
    assert (log["before"], log["after"]) == ({"0": 5, "1": 5}, {"0": 1, "1": 9})

    # A stripe the tier does not have (the other tier and the decoy do): nothing moves.
    before = await rows(event_id, 1)
    assert await conn.fetchval(rebalance, event_id, 1, [0, 3], [-1, 1]) == -1
    assert await rows(event_id, 1) == before
    # Zeros: no row written (its version stays), nothing logged.
    assert await conn.fetchval(rebalance, event_id, 1, [0, 1], [0, 0]) == 0
    assert await rows(event_id, 1) == before
    assert await conn.fetchval("SELECT count(*) FROM ga_rebalances WHERE event_id = $1",
                               event_id) == 1
    # Deltas that do not pair with the stripes are refused, not padded.
    with pytest.raises(asyncpg.RaiseError):
        await conn.fetchval(rebalance, event_id, 1, [0, 1], [-1, 1, 0])
    assert (await rows(event_id, 2), await rows(decoy, 1)) == others
    await audit_clean(conn)
