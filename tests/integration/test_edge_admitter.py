"""The admitter: the cap and the rate hold under a burst, admission pauses
while core is unhealthy (and for an operator) and resumes, and two edge
processes never admit anyone twice (fenced lease)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import redis.asyncio

from onsale.compose import Tiers, app_for
from onsale.core.health import HEALTH_KEY
from onsale.edge.queue_store import Fenced
from onsale.embedded import EmbeddedValkey
from tests.conftest import ADMIN_TOKEN, make_settings
from tests.integration.edge_support import (
    admitter_for,
    edge_api,
    edge_of,
    join_all,
    keys,
    new_accounts,
    queue_event,
    refresh,
    tick_until,
)
from tests.stack import eventually


async def occupied(r: redis.asyncio.Redis, event_id: int) -> int:
    return int(await r.zcard(keys(event_id).active)) + int(await r.zcard(keys(event_id).pending))


async def test_the_cap_is_never_exceeded_under_a_burst(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, active_cap=25)
        crowd = await join_all(api, await new_accounts(conn, 200), event_id)
        admitter = admitter_for(api)
        seen: list[int] = []
        stop = asyncio.Event()

        async def watch() -> None:
            while not stop.is_set():
                seen.append(await occupied(redis_client, event_id))
                await asyncio.sleep(0)

        async def shoppers() -> None:  # the admitted ones arrive and claim sessions
            while not stop.is_set():
                await refresh(api)
                await asyncio.gather(*(v.poll() for v in crowd if v.state != "admitted"))

        tasks = [asyncio.create_task(watch()), asyncio.create_task(shoppers())]
        try:
            async def full() -> bool:
                return await occupied(redis_client, event_id) == 25
            await tick_until(admitter, full)
            for _ in range(20):  # keep ticking: nobody leaves, so nobody more gets in
                await admitter.tick()
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        assert max(seen) <= 25 and len(admitter.admitted) == 25
        assert await redis_client.hget(keys(event_id).stats, "admitted") == b"25"


async def test_the_rate_is_never_exceeded_under_a_burst(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    rate = 1800  # per minute: 30 per second, the bucket holds one second of it
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, admission_rate_min=rate, admission_rate_max=rate)
        await join_all(api, await new_accounts(conn, 120), event_id)
        admitter = admitter_for(api)

        async def enough() -> bool:
            return len(admitter.admitted) >= 70
        await tick_until(admitter, enough)
        times = sorted(float(t) / 1000 for _, t in await redis_client.zrange(
            keys(event_id).pending, 0, -1, withscores=True))
        per_second, burst = rate / 60, rate / 60
        # Token bucket: any stretch of admissions fits in one burst plus the rate.
        for i in range(len(times)):
            for j in range(i, len(times)):
                assert j - i + 1 <= burst + per_second * (times[j] - times[i]) + 1, (i, j)


async def test_admission_pauses_while_core_is_unhealthy_and_resumes(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    settings = make_settings(db_url, redis_url=valkey.url)
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, admission_rate_min=600, admission_rate_max=600)
        crowd = await join_all(api, await new_accounts(conn, 40), event_id)
        admitter = admitter_for(api)
        await tick_until(admitter, lambda: _some(admitter))
        # Core goes away: this test's app is the only one reporting; stop it.
        await _stop_core_reports(redis_client)

        async def paused() -> bool:
            return await redis_client.hget(keys(event_id).status, "state") == b"unhealthy"
        await tick_until(admitter, paused)
        frozen = len(admitter.admitted)
        for _ in range(10):
            await admitter.tick()
        assert len(admitter.admitted) == frozen  # nobody admitted while core is down
        await refresh(api)
        waiting = [v for v in crowd if v.last["place"] > frozen + 5]
        answer = (await waiting[0].poll()).json()
        assert answer["state"] == "paused" and answer["place"] == waiting[0].last["place"]
        # Core comes back (a core process starts and reports again).
        core = app_for(Tiers(core=True), settings)
        async with core.router.lifespan_context(core):
            await tick_until(admitter, lambda: _more(admitter, frozen))
            state = await redis_client.hget(keys(event_id).status, "state")
            assert state in (b"increasing", b"holding", b"decreasing")


async def _some(admitter: Any) -> bool:
    return len(admitter.admitted) > 0


async def _more(admitter: Any, than: int) -> bool:
    return len(admitter.admitted) > than


async def _stop_core_reports(r: redis.asyncio.Redis) -> None:
    """Cancel the in-process core's health reporter (its process 'dies')."""
    for task in asyncio.all_tasks():
        if task.get_name() == "onsale-core-health":
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def gone() -> bool:
        return not await r.hgetall(HEALTH_KEY)
    await eventually(gone)


async def test_an_operator_pause_stops_admission_and_keeps_places(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, admission_rate_min=600, admission_rate_max=600)
        crowd = await join_all(api, await new_accounts(conn, 30), event_id)
        admitter = admitter_for(api)
        async with api.client() as c:
            r = await c.post(f"/api/ops/events/{event_id}/queue/pause", headers=admin)
            assert r.status_code == 200 and r.json()["settings"]["paused"] is True
            for _ in range(10):
                await admitter.tick()
            assert admitter.admitted == []
            await refresh(api)
            assert (await crowd[0].poll()).json()["state"] == "paused"
            figures = (await c.get(f"/api/ops/events/{event_id}/queue", headers=admin)).json()
            assert figures["live"]["queued"] == 30
            assert figures["controller"]["state"] == "paused"
            r = await c.post(f"/api/ops/events/{event_id}/queue/resume", headers=admin)
            assert r.json()["settings"]["paused"] is False
        edge_of(api).configs.forget(event_id)
        await tick_until(admitter, lambda: _some(admitter))
        first = min(crowd, key=lambda v: int(v.last["place"]))
        assert admitter.admitted[0] == (event_id, str(first.account))


async def test_two_admitters_never_admit_anyone_twice(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, admission_rate_min=6000, admission_rate_max=6000)
        crowd = await join_all(api, await new_accounts(conn, 150), event_id)
        first, second = admitter_for(api, owner="edge-1"), admitter_for(api, owner="edge-2")
        await tick_until(first, lambda: _some(first))
        fence = first.runs[event_id].fence
        await second.tick()
        assert second.admitted == [] and event_id not in second.runs  # edge-1 holds the lease
        # edge-1 stalls past its lease (as in a long GC pause): edge-2 takes over ...
        await redis_client.delete(keys(event_id).lease)
        await tick_until(second, lambda: _some(second))
        assert second.runs[event_id].fence == fence + 1
        # ... and whatever edge-1 tries with its old fencing token is refused.
        try:
            await edge_of(api).store.admit(event_id, fence, 10, int(time.time() * 1000),
                                           300_000, 10_000)
            raise AssertionError("a stale fencing token admitted visitors")
        except Fenced:
            pass
        # Both run on, losing and taking the lease now and then, until all are in.
        stop = asyncio.Event()

        async def run(admitter: Any) -> None:
            while not stop.is_set():
                await admitter.tick()
                await asyncio.sleep(0.01)

        async def steal_leases() -> None:
            while not stop.is_set():
                await asyncio.sleep(0.05)
                await redis_client.delete(keys(event_id).lease)

        tasks = [asyncio.create_task(c) for c in (run(first), run(second), steal_leases())]

        async def everyone() -> bool:
            return len(first.admitted) + len(second.admitted) >= len(crowd)
        try:
            await eventually(everyone, within=60)
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        admitted = [a for _, a in first.admitted + second.admitted]
        assert len(admitted) == len(set(admitted)) == len(crowd)
        assert first.admitted and second.admitted
        assert await redis_client.hget(keys(event_id).stats, "admitted") == str(
            len(crowd)).encode()
