"""The waiting room against real Valkey and Postgres: joining, polling, FIFO
order, one place per account, the random draw, abandoned places, the policy."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import redis.asyncio

from onsale.core.draw_seed import commitment
from onsale.edge.draw import draw_order, merge_pages, verify_document
from onsale.embedded import EmbeddedValkey
from tests.conftest import ADMIN_TOKEN
from tests.integration.edge_support import (
    Visitor,
    admitter_for,
    edge_api,
    join_all,
    keys,
    new_accounts,
    queue_event,
    refresh,
    tick_until,
)


async def test_join_and_poll_answer_the_same_shape(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api)
        [alice] = await new_accounts(conn, 1)
        async with api.client(alice, admit=False) as c:
            joined = await c.post(f"/api/events/{event_id}/queue")
            assert joined.status_code == 200, joined.text
            assert f"onsale_queue_{event_id}" in joined.cookies
            polled = await c.get(f"/api/events/{event_id}/queue")  # the cookie carries it
        body = joined.json()
        assert body["state"] == "waiting" and body["place"] == 1 and body["position"] == 1
        assert body["eta_seconds"] == 1 and body["poll_after_seconds"] >= 1
        assert body["ticket"] and body["policy"] == "fifo"
        assert polled.status_code == 200
        assert {k: v for k, v in polled.json().items() if k != "ticket"} == {
            k: v for k, v in body.items() if k != "ticket"}
        async with api.client(uuid.uuid4(), admit=False) as stranger, api.client() as anon:
            assert (await stranger.get(f"/api/events/{event_id}/queue")).json()["code"] \
                == "not_in_queue"
            assert (await anon.post(f"/api/events/{event_id}/queue")).status_code == 401
            missing = await stranger.post("/api/events/999999/queue")
            assert (missing.status_code, missing.json()["code"]) == (404, "event_not_found")


async def test_fifo_order_is_kept_across_many_concurrent_joins(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api)
        crowd = await join_all(api, await new_accounts(conn, 300), event_id)
        places = {v.account: v.last["place"] for v in crowd}
        assert sorted(places.values()) == list(range(1, 301))  # one each, no gap
        late = await join_all(api, await new_accounts(conn, 5), event_id, concurrently=False)
        assert [v.last["place"] for v in late] == [301, 302, 303, 304, 305]  # arrival order
        admitter = admitter_for(api)

        async def everyone() -> bool:
            return len(admitter.admitted) == 305
        await tick_until(admitter, everyone)
        admitted = [uuid.UUID(a) for _, a in admitter.admitted]
        every_place = {**places, **{v.account: v.last["place"] for v in late}}
        assert [every_place[a] for a in admitted] == list(range(1, 306))  # in place order
        await refresh(api)
        first = crowd[0]
        assert (await first.poll()).json()["state"] == "admitted"
        assert first.token is not None


async def test_many_tabs_and_devices_get_one_place(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api)
        [alice] = await new_accounts(conn, 1)
        devices = [Visitor(api, alice, event_id) for _ in range(6)]
        answers = await asyncio.gather(*(d.join() for d in devices))
        tabs = await asyncio.gather(*(devices[0].join() for _ in range(4)))
        places = {r.json()["place"] for r in [*answers, *tabs]}
        assert places == {1}
        assert await redis_client.zcard(keys(event_id).queue) == 1
        assert await redis_client.hget(keys(event_id).stats, "joined") == b"1"


async def test_random_draw_is_reproducible_from_the_revealed_seed(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, queue_policy="random",
                                     onsale_at="2999-01-01T00:00:00Z")
        async with api.client() as c:
            before = (await c.get(f"/api/events/{event_id}")).json()["queue"]
        assert before["policy"] == "random" and before["draw"]["seed"] is None
        published = before["draw"]["commitment"]
        arrivals = await join_all(api, await new_accounts(conn, 40), event_id,
                                  concurrently=False)
        assert {v.last["state"] for v in arrivals} == {"prequeue"}
        assert {v.last["position"] for v in arrivals} == {None}
        # The sale opens (an operator moved it to now).
        await conn.execute("UPDATE events SET onsale_at = now() WHERE event_id = $1", event_id)
        admitter = admitter_for(api, targets=None)
        await refresh(api)

        async def drawn() -> Any:
            return await redis_client.hget(keys(event_id).status, "draw") == b"drawn"
        await tick_until(admitter, drawn)
        async with api.client() as c:
            doc = (await c.get(f"/api/events/{event_id}/queue/draw")).json()
            after = (await c.get(f"/api/events/{event_id}")).json()["queue"]["draw"]
            pages = [(await c.get(f"/api/events/{event_id}/queue/draw?per_page=15")).json()]
            while pages[-1]["next"]:
                pages.append((await c.get(pages[-1]["next"])).json())
            bad = await c.get(f"/api/events/{event_id}/queue/draw?per_page=100001")
        assert (bad.status_code, bad.json()["code"]) == (400, "invalid_request")
        assert [len(p["participants"]) for p in pages] == [15, 15, 10]
        assert {p["pages"] for p in pages} == {3} and doc["participant_count"] == 40
        merged, missing = merge_pages(pages)
        assert missing == [] and merged["participants"] == doc["participants"]
        assert merge_pages(pages[:2])[1] != []  # a page left out is noticed
        assert doc["commitment"] == published == commitment(doc["seed"])
        assert after["seed"] == doc["seed"]
        assert verify_document(doc) == []
        arrival_order = [str(v.account) for v in arrivals]
        assert sorted(doc["participants"]) == sorted(arrival_order)
        order = draw_order(doc["seed"], doc["participants"])
        assert order != arrival_order
        await refresh(api)
        for visitor in arrivals:
            await visitor.poll()
        assert {str(v.account): v.last["place"] for v in arrivals} == {
            account: i for i, account in enumerate(order, start=1)}
        [late] = await join_all(api, await new_accounts(conn, 1), event_id)
        assert late.last["place"] == 41  # after the drawn ones, first come first served


async def test_a_place_not_polled_for_the_grace_is_dropped_as_abandoned(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, active_cap=1)
        ghost, waiting = await join_all(api, await new_accounts(conn, 2), event_id,
                                        concurrently=False)
        # The ghost's last poll was six minutes ago (grace: five).
        old = int((await redis_client.time())[0] * 1000) - 360_000
        await redis_client.zadd(keys(event_id).seen, {str(ghost.account): old})
        admitter = admitter_for(api)

        async def admitted() -> bool:
            return len(admitter.admitted) == 1
        await tick_until(admitter, admitted)
        assert admitter.admitted == [(event_id, str(waiting.account))]
        assert await redis_client.hget(keys(event_id).stats, "abandoned") == b"1"
        await refresh(api)
        assert (await ghost.poll()).json()["state"] == "expired"
        again = await ghost.join()
        assert again.json()["place"] == 3  # back of the queue


async def test_the_policy_is_published_and_frozen_once_the_sale_opens(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, onsale_at="2999-01-01T00:00:00Z")
        path = f"/api/ops/events/{event_id}/queue"
        async with api.client() as c:
            assert (await c.get(f"/api/events/{event_id}")).json()["queue"]["draw"] is None
            r = await c.patch(path, json={"queue_policy": "random"}, headers=admin)
            assert r.status_code == 200, r.text
            shown = (await c.get(f"/api/events/{event_id}")).json()["queue"]
            assert shown["policy"] == "random" and len(shown["draw"]["commitment"]) == 64
            await conn.execute("UPDATE events SET onsale_at = now() WHERE event_id = $1",
                               event_id)
            frozen = await c.patch(path, json={"queue_policy": "fifo"}, headers=admin)
            assert (frozen.status_code, frozen.json()["code"]) == (409, "policy_frozen")
            same = await c.patch(path, json={"queue_policy": "random", "active_cap": 50},
                                 headers=admin)
            assert same.status_code == 200 and same.json()["settings"]["active_cap"] == 50
            bad = await c.patch(path, json={"admission_rate_min": 10, "admission_rate_max": 5},
                                headers=admin)
            assert (bad.status_code, bad.json()["code"]) == (400, "invalid_request")
            assert (await c.patch(path, json={"nope": 1}, headers=admin)).status_code == 400
            assert (await c.get(path)).status_code == 401


async def test_passthrough_admits_at_once_unless_an_operator_paused_it(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with edge_api(db_url, valkey.url) as api:
        event_id = await api.create_event(queue_policy="passthrough")
        early, late = (Visitor(api, a, event_id) for a in await new_accounts(conn, 2))
        assert (await early.join()).json()["state"] == "admitted" and early.token
        async with api.client() as c:
            r = await c.post(f"/api/ops/events/{event_id}/queue/pause", headers=admin)
            assert r.status_code == 200
        assert (await late.join()).json()["state"] == "paused" and late.token is None
        assert (await early.poll()).json()["state"] == "admitted"  # shoppers go on
        async with api.client() as c:
            await c.post(f"/api/ops/events/{event_id}/queue/resume", headers=admin)
        assert (await late.join()).json()["state"] == "admitted"


async def test_a_waiting_visitors_poll_is_answered_from_the_raw_scope_as_poll_would(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    """Issue 29: the fast lane's quick poll (no Starlette Request) answers a visitor who
    waits with poll's exact answer; everything else it leaves to poll."""
    import dataclasses

    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, admission_rate_min=1, admission_rate_max=1)
        alice, bob = await new_accounts(conn, 2)
        app = api.app
        (route,) = [r for r in app.hot["GET"] if r.path.endswith("/queue")]
        assert route.quick is not None
        quick = route.quick
        taken: list[bool] = []

        def spy(scope: Any) -> Any:
            answer = quick(scope)
            taken.append(answer is not None)
            return answer

        def lane(fn: Any) -> None:
            app.hot["GET"] = tuple(dataclasses.replace(r, quick=fn) if r.path == route.path
                                   else r for r in app.hot["GET"])

        url = f"/api/events/{event_id}/queue"
        async with api.client(bob, admit=False) as b:  # first in line: bob
            assert (await b.post(url)).status_code == 200
        async with api.client(alice, admit=False) as c:
            joined = await c.post(url)
            ticket = joined.json()["ticket"]
            lane(spy)
            by_cookie = await c.get(url)
            by_header = await c.get(url, headers={"Queue-Ticket": ticket})
            lane(None)
            full = await c.get(url)
            lane(spy)
        assert taken == [True, True]
        assert by_cookie.json()["state"] == "waiting" and by_cookie.json()["place"] == 2
        assert by_cookie.json() == by_header.json() == full.json()

        def same(r: Any) -> dict[str, str]:
            return {k: v for k, v in r.headers.items()
                    if k not in ("date", "x-request-id", "content-length")}
        assert same(by_cookie) == same(full)
        taken.clear()
        async with api.client(uuid.uuid4(), admit=False) as stranger, api.client() as anon:
            assert (await stranger.get(url)).json()["code"] == "not_in_queue"
            assert (await anon.get(url)).status_code == 401
            assert (await stranger.get("/api/events/0x1/queue")).status_code == 404
        assert taken == [False, False, False]  # each left to poll


async def test_the_quick_poll_remembers_a_visitor_by_its_headers_and_judges_each_poll(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    """The quick poll remembers a visitor by the raw headers it sent (``Edge.visitors``):
    the same headers again are one lookup, other headers are checked afresh (another's
    ticket is not this visitor's), a bloated header is answered but not remembered, and
    the session's age is judged on every poll."""
    import dataclasses

    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, admission_rate_min=1, admission_rate_max=1)
        alice, bob = await new_accounts(conn, 2)
        app = api.app
        (route,) = [r for r in app.hot["GET"] if r.path.endswith("/queue")]
        quick = route.quick
        assert quick is not None
        taken: list[bool] = []

        def spy(scope: Any) -> Any:
            answer = quick(scope)
            taken.append(answer is not None)
            return answer

        app.hot["GET"] = tuple(dataclasses.replace(r, quick=spy) if r.path == route.path
                               else r for r in app.hot["GET"])
        edge = app.state.edge
        url = f"/api/events/{event_id}/queue"
        async with api.client(bob, admit=False) as b:
            bobs = (await b.post(url)).json()["ticket"]
        async with api.client(alice, admit=False) as c:
            assert (await c.post(url)).status_code == 200
            before = len(edge.visitors)
            first = await c.get(url)
            assert len(edge.visitors) == before + 1  # remembered by its headers
            again = await c.get(url)
            assert len(edge.visitors) == before + 1  # the same headers: looked up
            assert first.json() == again.json() and again.json()["place"] == 2
            c.cookies.set("junk", "x" * 1100)  # a bloated Cookie header: answered, not kept
            bloated = await c.get(url)
            assert bloated.json() == again.json() and len(edge.visitors) == before + 1
            c.cookies.delete("junk")
            stolen = await c.get(url, headers={"Queue-Ticket": bobs})
            assert stolen.json()["code"] == "not_in_queue"  # as poll says it
            assert len(edge.visitors) == before + 1  # not remembered: not alice's ticket
            app.state.shared.sessions.codec.max_age = 0  # every session now too old
            aged = await c.get(url)
            assert aged.status_code == 401
        assert taken == [True, True, True, False, False]
