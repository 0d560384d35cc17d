"""Abuse controls: per-IP and per-account limits on join and poll (429 with
Retry-After), polls that cost no Redis command, and proof of work required
by the event or by the bot-detection hook."""

from __future__ import annotations

import uuid
from typing import Any

import redis.asyncio

from onsale.edge.pow import HIGH_RISK_MIN_DIFFICULTY, RiskFacts, solve, work
from onsale.embedded import EmbeddedValkey
from tests.conftest import Api, build_api_app, make_settings
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

# What the background loops send (status refresh, batched marks, health); a
# poll must add nothing to these counts beyond them, and nothing else at all.
BACKGROUND = {"hgetall", "zadd", "hset", "hdel", "info", "time"}


async def command_counts(r: redis.asyncio.Redis) -> dict[str, int]:
    stats = await r.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


async def test_polls_cost_no_redis_command(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, admission_rate_min=60, admission_rate_max=60)
        crowd = await join_all(api, await new_accounts(conn, 50), event_id)
        await refresh(api)
        before = await command_counts(redis_client)
        polls = 0
        for _ in range(20):
            for visitor in crowd:
                r = await visitor.poll()
                assert r.status_code == 200 and r.json()["state"] == "waiting", r.text
                polls += 1
        after = await command_counts(redis_client)
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        assert {k: v for k, v in delta.items() if v and k not in BACKGROUND} == {}
        assert sum(delta.values()) < polls / 20  # the background, not the polls


async def test_join_and_poll_are_rate_limited_per_account_and_per_ip(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url, join_limit_account=6, poll_limit_account=6,
                        join_limit_ip=12) as api:
        event_id = await queue_event(api)
        alice, bob, carol = await new_accounts(conn, 3)
        me = Visitor(api, alice, event_id)
        joins = [await me.join() for _ in range(8)]
        codes = [r.status_code for r in joins]
        assert codes[:5] == [200] * 5 and 429 in codes  # a burst of 5, then the rate
        limited = next(r for r in joins if r.status_code == 429)
        assert limited.json()["code"] == "rate_limited"
        assert int(limited.headers["retry-after"]) >= 1
        polls = [(await me.poll()).status_code for _ in range(8)]
        assert polls[:5] == [200] * 5 and 429 in polls
        # The IP limit (12/min, burst 5) catches many accounts from one address.
        others = [await Visitor(api, a, event_id).join() for a in (bob, carol, bob, carol)]
        assert 429 in [r.status_code for r in others]


async def test_proof_of_work_when_the_event_asks_for_it(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, pow_difficulty=10)
        [alice] = await new_accounts(conn, 1)
        visitor = Visitor(api, alice, event_id)
        first = await visitor.join()
        assert (first.status_code, first.json()["code"]) == (403, "pow_required")
        challenge = first.json()["challenge"]
        assert first.json()["difficulty"] == 10
        # A solution that certainly falls short (a fixed one passes once in 1,024 challenges).
        short = next(f"nope{i}" for i in range(10_000) if work(challenge, f"nope{i}") < 10)
        wrong = await visitor.join(pow={"challenge": challenge, "solution": short})
        assert (wrong.status_code, wrong.json()["code"]) == (403, "pow_invalid")
        joined = await visitor.join(pow={"challenge": challenge,
                                         "solution": solve(challenge, 10)})
        assert joined.status_code == 200 and joined.json()["place"] == 1
        assert (await visitor.join()).status_code == 200  # this device proved it already
        [bob] = await new_accounts(conn, 1)
        stolen = await Visitor(api, bob, event_id).join(
            pow={"challenge": challenge, "solution": solve(challenge, 10)})
        assert stolen.json()["code"] == "pow_invalid"  # bound to alice


async def test_a_visitor_flagged_high_risk_must_solve_a_harder_one(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    flagged: list[RiskFacts] = []

    def detector(facts: RiskFacts) -> bool:
        flagged.append(facts)
        return facts.user_agent.startswith("curl")

    app = build_api_app(make_settings(db_url, redis_url=valkey.url), risk=detector)
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await queue_event(api)
        alice, bob = await new_accounts(conn, 2)
        async with api.client(alice, admit=False) as c:
            bot = await c.post(f"/api/events/{event_id}/queue", headers={"User-Agent": "curl/8"})
        assert (bot.status_code, bot.json()["code"]) == (403, "pow_required")
        assert bot.json()["difficulty"] == HIGH_RISK_MIN_DIFFICULTY
        async with api.client(bob, admit=False) as c:
            human = await c.post(f"/api/events/{event_id}/queue",
                                 headers={"User-Agent": "Mozilla/5.0"})
        assert human.status_code == 200
        assert [f.account_id for f in flagged] == [alice, bob]
        assert isinstance(flagged[0].ip, str) and flagged[0].event_id == event_id


async def test_admitted_visitors_get_a_token_and_polls_renew_nothing_needlessly(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api)
        [alice] = await new_accounts(conn, 1)
        [visitor] = await join_all(api, [alice], event_id)
        admitter = admitter_for(api)

        async def admitted() -> bool:
            await refresh(api)
            return (await visitor.poll()).json()["state"] == "admitted"
        await tick_until(admitter, admitted)
        token = visitor.token
        assert token and (await visitor.poll()).json()["admission_token"] == token
        async with api.client(alice, admit=False) as c:
            r = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1]},
                             headers={"Idempotency-Key": str(uuid.uuid4()),
                                      "Admission-Token": token})
        assert r.status_code == 201, r.text


async def spent_challenges(r: redis.asyncio.Redis, event_id: int) -> dict[str, int]:
    """The spent-challenge marks of an event, with their TTLs in ms."""
    found = [k async for k in r.scan_iter(match=keys(event_id).spent("*"))]
    return {k.decode(): int(await r.pttl(k)) for k in found}


async def test_a_proof_of_work_admits_one_join_only(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    """A solution verifies for its challenge's whole life (5 minutes), so the join
    script spends it: a second join with it, from another device, is refused
    with a fresh challenge, and a solution of that one works (issue 21)."""
    async with edge_api(db_url, valkey.url) as api:
        for policy in ("fifo", "passthrough"):  # a place, or a claim at once
            event_id = await queue_event(api, queue_policy=policy, pow_difficulty=8)
            [alice] = await new_accounts(conn, 1)
            phone = Visitor(api, alice, event_id)
            challenge = (await phone.join()).json()["challenge"]
            proof = {"challenge": challenge, "solution": solve(challenge, 8)}
            first = await phone.join(pow=proof)
            assert first.status_code == 200, first.text
            [(mark, ttl)] = (await spent_challenges(redis_client, event_id)).items()
            assert 290_000 < ttl <= 360_000  # the challenge's life and a minute of slack
            sessions = await redis_client.hgetall(keys(event_id).sess)

            laptop = Visitor(api, alice, event_id)  # a new device: no ticket
            replay = await laptop.join(pow=proof)
            assert (replay.status_code, replay.json()["code"]) == (403, "pow_replayed")
            assert replay.json()["difficulty"] == 8 and laptop.ticket is None
            assert "ticket" not in replay.json() and "admission_token" not in replay.json()
            # The refused join changed nothing: no session taken over, one mark.
            assert await redis_client.hgetall(keys(event_id).sess) == sessions
            assert list(await spent_challenges(redis_client, event_id)) == [mark]
            fresh = replay.json()["challenge"]
            assert fresh != challenge
            again = await laptop.join(pow={"challenge": fresh, "solution": solve(fresh, 8)})
            assert again.status_code == 200, again.text
            assert again.json().get("place") == first.json().get("place")
            assert again.json()["state"] == first.json()["state"]
            assert len(await spent_challenges(redis_client, event_id)) == 2
