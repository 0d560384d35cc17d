"""The hold API over HTTP against a real PostgreSQL: shapes, errors, ownership."""

from __future__ import annotations

import uuid
from typing import Any

from onsale.embedded import EmbeddedValkey
from tests.conftest import Api, asyncpg_connect, audit_clean, hold


async def test_hold_then_read_then_release(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=100)
    alice = await api.account(conn)
    async with api.client(alice) as c:
        r = await hold(c, event_id, [5, 3, 4])
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["status"] == "HELD"
        assert [s["seat_id"] for s in body["seats"]] == [3, 4, 5]
        assert body["amount_minor"] == sum(s["price_minor"] for s in body["seats"])
        assert body["currency"] == "USD"
        assert r.headers["location"] == f"/api/holds/{body['hold_id']}"

        got = await c.get(f"/api/holds/{body['hold_id']}")
        assert got.status_code == 200
        assert got.json()["seats"] == body["seats"]
        assert got.json()["status"] == "HELD"

        released = await c.delete(f"/api/holds/{body['hold_id']}")
        assert released.status_code == 200
        assert released.json()["status"] == "RELEASED"
        again = await c.delete(f"/api/holds/{body['hold_id']}")
        assert again.status_code == 200 and again.json()["status"] == "RELEASED"
    rows = await conn.fetch(
        "SELECT status, hold_id FROM seat_inventory WHERE event_id = $1 AND seat_id = ANY($2)",
        event_id, [3, 4, 5],
    )
    assert {(r["status"], r["hold_id"]) for r in rows} == {("AVAILABLE", None)}
    await audit_clean(conn)


async def test_price_comes_from_the_server_not_the_client(api: Api, conn: Any) -> None:
    event_id = await api.create_event(
        seats=50, price_tiers=[{"name": "Only", "price_minor": 1234}])
    async with api.client(await api.account(conn)) as c:
        r = await c.post(f"/api/events/{event_id}/holds",
                         json={"seat_ids": [1, 2], "amount_minor": 1},
                         headers={"Idempotency-Key": "k"})
    assert r.status_code == 201
    assert r.json()["amount_minor"] == 2468


async def test_error_codes(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=20, max_tickets_per_account=4)
    alice, bob = await api.account(conn), await api.account(conn)
    async with api.client(alice) as a, api.client(bob) as b, api.client() as anon:
        cases: list[tuple[Any, int, str]] = [
            (await anon.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1]},
                             headers={"Idempotency-Key": "x"}), 401, "authentication_required"),
            (await a.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1]}),
             400, "idempotency_key_required"),
            (await a.post(f"/api/events/{event_id}/holds", content=b"{nope",
                          headers={"Idempotency-Key": "x", "Content-Type": "application/json"}),
             400, "invalid_json"),
            (await a.post(f"/api/events/{event_id}/holds", content=b'{"seat_ids": [1]}',
                          headers={"Idempotency-Key": "x"}), 415, "unsupported_media_type"),
            (await hold(a, event_id, []), 400, "invalid_seats"),
            (await hold(a, event_id, [1, 1]), 400, "invalid_seats"),
            (await hold(a, event_id, [1, 2, 3, 4, 5, 6, 7]), 400, "invalid_seats"),
            (await hold(a, event_id, [1, 999]), 400, "invalid_seats"),
            (await hold(a, event_id, ["1"]), 400, "invalid_seats"),  # type: ignore[list-item]
            # No such event, so no queue to join: the gate refuses before core looks.
            (await hold(a, 999999, [1]), 403, "admission_required"),
            (await hold(a, event_id, [1, 2, 3, 4, 5]), 409, "ticket_limit_exceeded"),
        ]
        for response, status, code in cases:
            assert response.status_code == status, (code, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["code"] == code
            assert response.json()["status"] == status

        unknown = await hold(a, event_id, [1, 999])
        assert unknown.json()["unknown_seat_ids"] == [999]
        assert (await hold(a, event_id, [2, 3])).status_code == 201
        taken = await hold(b, event_id, [1, 3, 2])
        assert taken.status_code == 409
        assert taken.json()["code"] == "seats_unavailable"
        assert taken.json()["unavailable_seat_ids"] == [2, 3]
        # Nothing half-written: seat 1 is still free after the failed attempt.
        assert (await hold(b, event_id, [1])).status_code == 201
        # Limit counts what is held: 2 held + 3 more > 4.
        over = await hold(a, event_id, [10, 11, 12])
        assert over.json()["code"] == "ticket_limit_exceeded"
        assert over.json()["owned"] == 2 and over.json()["limit"] == 4
    assert await conn.fetchval("SELECT count(*) FROM holds") == 2
    assert await conn.fetchval("SELECT count(*) FROM idempotency_keys") == 2
    await audit_clean(conn)


async def test_other_accounts_get_404_for_my_hold(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10)
    alice, mallory = await api.account(conn), await api.account(conn)
    async with api.client(alice) as a, api.client(mallory) as m:
        hold_id = (await hold(a, event_id, [1])).json()["hold_id"]
        assert (await m.get(f"/api/holds/{hold_id}")).json()["code"] == "hold_not_found"
        assert (await m.delete(f"/api/holds/{hold_id}")).status_code == 404
        assert (await m.get(f"/api/holds/{uuid.uuid4()}")).status_code == 404
        assert (await m.get("/api/holds/not-a-uuid")).status_code == 404
        assert (await a.get(f"/api/holds/{hold_id}")).json()["status"] == "HELD"


async def test_idempotent_replay_and_conflict(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10)
    alice = await api.account(conn)
    async with api.client(alice) as a:
        first = await hold(a, event_id, [1, 2], key="same")
        replay = await hold(a, event_id, [2, 1], key="same")  # same meaning, other order
        assert replay.status_code == 201
        assert replay.json() == first.json()
        assert replay.headers["idempotent-replayed"] == "true"
        conflict = await hold(a, event_id, [1, 3], key="same")
        assert conflict.status_code == 409
        assert conflict.json()["code"] == "idempotency_conflict"
    # Keys are per account: another account may use the same key string.
    async with api.client(await api.account(conn)) as b:
        assert (await hold(b, event_id, [5], key="same")).status_code == 201
    assert await conn.fetchval("SELECT count(*) FROM holds") == 2
    await audit_clean(conn)


async def test_best_available_together(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=500)
    async with api.client(await api.account(conn)) as a:
        r = await a.post(f"/api/events/{event_id}/holds",
                         json={"best_available": {"quantity": 4, "together": True}},
                         headers={"Idempotency-Key": "best"})
    assert r.status_code == 201, r.text
    seats = r.json()["seats"]
    assert len(seats) == 4
    assert len({(s["section"], s["row"]) for s in seats}) == 1
    numbers = sorted(s["number"] for s in seats)
    assert numbers == list(range(numbers[0], numbers[0] + 4))
    await audit_clean(conn)


async def test_best_available_reports_when_nothing_fits(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=3, max_tickets_per_account=6)
    async with api.client(await api.account(conn)) as a:
        r = await a.post(f"/api/events/{event_id}/holds",
                         json={"best_available": {"quantity": 4}},
                         headers={"Idempotency-Key": "k"})
        assert r.status_code == 409 and r.json()["code"] == "seats_unavailable"
        bad = await a.post(f"/api/events/{event_id}/holds",
                           json={"best_available": {"quantity": 0}},
                           headers={"Idempotency-Key": "k2"})
        assert bad.json()["code"] == "invalid_seats"


async def test_database_down_is_503_never_a_guess(
        db_url: str, valkey: EmbeddedValkey, redis_client: Any) -> None:
    from tests.conftest import build_api_app, make_settings

    app = build_api_app(make_settings(db_url, redis_url=valkey.url))
    async with app.router.lifespan_context(app):
        api = Api(app)
        async with asyncpg_connect(db_url) as conn:
            event_id = await api.create_event(seats=10)
            account = await api.account(conn)
        headers = await api.admit(account, event_id)  # admitted before the outage
        await app.state.core.db.pool.close()  # the database becomes unreachable
        async with api.client(account, admit=False) as c:
            r = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1]},
                             headers={**headers, "Idempotency-Key": "k"})
        assert r.status_code == 503
        assert r.json()["code"] == "inventory_unavailable"
        assert r.headers["retry-after"] == "1"
        app.state.core.db.pool.terminate()


async def test_holds_before_the_sale_opens_are_refused(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10, onsale_at="2999-01-01T00:00:00Z")
    async with api.client(await api.account(conn)) as a:
        r = await hold(a, event_id, [1])
    assert r.status_code == 409
    assert r.json()["code"] == "sale_not_open"
    assert r.json()["onsale_at"].startswith("2999-01-01T00:00:00")
    assert await conn.fetchval("SELECT count(*) FROM idempotency_keys") == 0


async def test_best_available_takes_the_best_block_not_the_first(api: Api, conn: Any) -> None:
    """The chosen block has the lowest rank sum among all free adjacent blocks
    of that size in the candidate rows."""
    event_id = await api.create_event(seats=300)
    async with api.client(await api.account(conn)) as a:
        r = await a.post(f"/api/events/{event_id}/holds",
                         json={"best_available": {"quantity": 3, "together": True}},
                         headers={"Idempotency-Key": "best3"})
    got = sorted(s["seat_id"] for s in r.json()["seats"])
    best = await conn.fetchval("""
        WITH w AS (
            SELECT array_agg(seat_id) OVER f AS ids, count(*) OVER f AS n,
                   sum(rank) OVER f AS score
            FROM seats WHERE event_id = $1
            WINDOW f AS (PARTITION BY section, row_label ORDER BY number
                         ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING))
        SELECT min(score) FROM w WHERE n = 3""", event_id)
    score = await conn.fetchval(
        "SELECT sum(rank) FROM seats WHERE event_id = $1 AND seat_id = ANY($2)", event_id, got)
    assert score == best


async def test_releasing_an_expired_hold_reports_expired(api: Api, conn: Any) -> None:
    import asyncio

    event_id = await api.create_event(seats=10, hold_ttl_seconds=1)
    async with api.client(await api.account(conn)) as a:
        hold_id = (await hold(a, event_id, [1, 2])).json()["hold_id"]
        await asyncio.sleep(1.05)
        r = await a.delete(f"/api/holds/{hold_id}")
    assert r.status_code == 200 and r.json()["status"] == "EXPIRED"
    reasons = await conn.fetch("SELECT DISTINCT reason FROM hold_releases")
    assert [x["reason"] for x in reasons] == ["expired"]
    assert await conn.fetchval(
        "SELECT count(*) FROM seat_inventory WHERE event_id = $1 AND status = 'AVAILABLE'",
        event_id) == 10
    await audit_clean(conn)


async def test_get_hold_matches_the_created_response(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10)
    async with api.client(await api.account(conn)) as a:
        created = (await hold(a, event_id, [1, 2])).json()
        read = (await a.get(f"/api/holds/{created['hold_id']}")).json()
    assert read == created


async def test_best_available_together_looks_past_scattered_single_seats(
    api: Api, conn: Any,
) -> None:
    """The 600 best seats are free only as single gaps (every other one blocked);
    a request for two together still finds a pair further back."""
    event_id = await api.create_event(seats=2000)
    await conn.execute("""
        UPDATE seat_inventory si SET status = 'BLOCKED'
        FROM seats s
        WHERE s.event_id = si.event_id AND s.seat_id = si.seat_id AND si.event_id = $1
          AND s.rank <= 1200 AND s.number % 2 = 0""", event_id)
    async with api.client(await api.account(conn)) as a:
        r = await a.post(f"/api/events/{event_id}/holds",
                         json={"best_available": {"quantity": 2, "together": True}},
                         headers={"Idempotency-Key": "pair"})
    assert r.status_code == 201, r.text
    seats = r.json()["seats"]
    assert seats[0]["row"] == seats[1]["row"] and seats[0]["section"] == seats[1]["section"]
    assert abs(seats[0]["number"] - seats[1]["number"]) == 1


async def test_hostile_bodies_get_problems_not_stack_traces(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10)
    async with api.client(await api.account(conn)) as a:
        cases = [
            (b"[" * 20_000 + b"]" * 20_000, 400, "invalid_json"),  # deep nesting
            (b"\xff\xfe", 400, "invalid_json"),
            (b'{"seat_ids": [1]}' + b" " * 70_000, 413, "invalid_request"),
            (b'{"seat_ids": [2147483648]}', 400, "invalid_seats"),
            (b'{"seat_ids": [true]}', 400, "invalid_seats"),
            (b'{"best_available": {"quantity": 2, "section": 7}}', 400, "invalid_seats"),
        ]
        for body, status, code in cases:
            r = await a.post(f"/api/events/{event_id}/holds", content=body,
                             headers={"Idempotency-Key": "hostile",
                                      "Content-Type": "application/json"})
            assert (r.status_code, r.json()["code"]) == (status, code), body[:40]
        huge = await a.post(f"/api/events/{2**63}/holds", json={"seat_ids": [1]},
                            headers={"Idempotency-Key": "k"})
        assert huge.status_code == 404 and huge.json()["code"] == "event_not_found"
