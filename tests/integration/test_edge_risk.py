"""The risk hook can only slow shoppers down (issue 27): a scorer that says "no risk" to
an obvious bot lets it past no invariant (one place per account, the per-account ticket
limit), and a scorer that raises, refuses or fails only asks for more work or refuses
at the door. Each scenario ends with the audit. Real PostgreSQL and Valkey."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import redis.asyncio

from onsale.edge.pow import (
    HIGH_RISK_MIN_DIFFICULTY,
    RAISED_RISK_MIN_DIFFICULTY,
    RiskFacts,
    RiskHook,
)
from onsale.edge.risk import Band, RiskVerdict
from onsale.embedded import EmbeddedValkey
from tests.conftest import ADMIN_TOKEN, Api, audit_clean, build_api_app, make_settings
from tests.integration.edge_support import (
    Visitor,
    admitter_for,
    edge_of,
    new_accounts,
    queue_event,
    refresh,
    tick_until,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
# What a bot sends: an HTTP library's agent, no browser headers.
BOT = {"User-Agent": "python-requests/2.31", "Accept": "*/*"}


def sample(text: str, name: str, **labels: str) -> float | None:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        m = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
        if m and ",".join(sorted((m[1] or "").split(","))) == want:
            return float(m[2])
    return None


class Switch:
    """A hook whose verdict the test sets (``None``: it raises)."""

    def __init__(self) -> None:
        self.answer: bool | Band | RiskVerdict | None = Band.LOW
        self.seen: list[RiskFacts] = []

    def __call__(self, facts: RiskFacts) -> bool | Band | RiskVerdict:
        self.seen.append(facts)
        if self.answer is None:
            raise RuntimeError("the detector is down")
        return self.answer


async def bot_join(api: Api, account: uuid.UUID, event_id: int) -> httpx.Response:
    """A join from a new device (no ticket, no cookie kept) with a bot's headers."""
    async with api.client(account, admit=False) as c:
        return await c.post(f"/api/events/{event_id}/queue", headers=BOT)


async def queued(api: Api, event_id: int) -> int:
    return int((await edge_of(api).store.figures(event_id))["queued"])


def app_with(db_url: str, valkey: EmbeddedValkey, hook: RiskHook) -> Any:
    return build_api_app(make_settings(db_url, redis_url=valkey.url), risk=hook)


async def test_no_risk_for_a_bot_still_leaves_it_one_place_and_its_ticket_limit(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    switch = Switch()  # says "low" to everyone: the bot is let through the door
    app = app_with(db_url, valkey, switch)
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await queue_event(api, seats=20, max_tickets_per_account=2)
        [bot] = await new_accounts(conn, 1)
        # Twelve devices of one account, from one address, with a bot's headers.
        joins = [await bot_join(api, bot, event_id) for _ in range(12)]
        assert {r.status_code for r in joins} == {200}, joins[0].text
        assert {r.json()["place"] for r in joins} == {1}  # one place, whatever the devices
        assert await queued(api, event_id) == 1
        assert len(switch.seen) == 12 and switch.seen[-1].recent.device_joins > 10
        assert switch.seen[-1].user_agent == BOT["User-Agent"]

        # Admitted, the bot holds its limit and not one seat more, from any device.
        device = Visitor(api, bot, event_id)
        assert (await device.join()).status_code == 200

        async def admitted() -> bool:
            await refresh(api)
            return (await device.poll()).json()["state"] == "admitted"
        await tick_until(admitter_for(api), admitted)
        token = device.token
        assert token is not None
        async with api.client(bot, admit=False) as c:
            headers = {"Admission-Token": token}
            first = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1, 2]},
                                 headers={**headers, "Idempotency-Key": str(uuid.uuid4())})
            assert first.status_code == 201, first.text
            more = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [3]},
                                headers={**headers, "Idempotency-Key": str(uuid.uuid4())})
            assert (more.status_code, more.json()["code"]) == (409, "ticket_limit_exceeded")
            too_many = await c.post(
                f"/api/events/{event_id}/holds", json={"seat_ids": [4, 5, 6]},
                headers={**headers, "Idempotency-Key": str(uuid.uuid4())})
            assert too_many.status_code in (409, 422), too_many.text
        # Another device of the bot joins again: still the one place.
        again = await bot_join(api, bot, event_id)
        assert again.status_code == 200 and await queued(api, event_id) <= 1
        assert await conn.fetchval(
            "SELECT sum(seat_count) FROM holds WHERE event_id = $1 AND account_id = $2 "
            "AND status IN ('HELD', 'PAYMENT_PENDING', 'CONFIRMED')", event_id, bot) == 2
    await audit_clean(conn)


async def test_raising_refusing_or_failing_only_slows_or_stops_at_the_door(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    switch = Switch()
    app = app_with(db_url, valkey, switch)
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await queue_event(api, seats=20, max_tickets_per_account=2)
        alice, bob, carol, dave = await new_accounts(conn, 4)
        cases: list[tuple[bool | Band | RiskVerdict | None, int]] = [
            (Band.RAISED, RAISED_RISK_MIN_DIFFICULTY),
            (RiskVerdict(Band.HIGH, 70), HIGH_RISK_MIN_DIFFICULTY),
            (True, HIGH_RISK_MIN_DIFFICULTY),   # a hook of the first contract
            (None, HIGH_RISK_MIN_DIFFICULTY),   # a hook that raises
        ]
        for answer, difficulty in cases:
            switch.answer = answer
            r = await bot_join(api, alice, event_id)
            assert (r.status_code, r.json()["code"]) == (403, "pow_required"), r.text
            assert r.json()["difficulty"] == difficulty
        switch.answer = Band.REFUSED
        refused = await bot_join(api, bob, event_id)
        assert refused.status_code == 403
        assert refused.headers["content-type"].startswith("application/problem+json")
        body = refused.json()
        assert body["code"] == "risk_refused" and "browser" in body["detail"]
        assert "ticket" not in body and "challenge" not in body
        assert await queued(api, event_id) == 0  # nobody got a place by any of these

        # A visitor already in the queue keeps its place: a verdict is asked of new
        # devices only, and a refusal of one of its new devices takes nothing away.
        switch.answer = Band.LOW
        [carols] = [Visitor(api, carol, event_id)]
        place = (await carols.join()).json()["place"]
        switch.answer = Band.REFUSED
        assert (await carols.join()).json()["place"] == place  # its ticket: no verdict
        assert (await bot_join(api, carol, event_id)).json()["code"] == "risk_refused"
        assert (await carols.poll()).status_code == 200
        assert await queued(api, event_id) == 1
        switch.answer = Band.LOW
        assert (await bot_join(api, dave, event_id)).status_code == 200

        async with api.client() as anon:
            text = (await anon.get("/metrics")).text
        counts = {b.value: sample(text, "onsale_risk_verdicts_total", band=b.value)
                  for b in Band}
        assert counts == {"low": 2.0, "raised": 1.0, "high": 3.0, "refused": 2.0}
        assert sample(text, "onsale_risk_score_count") == 1.0  # the one verdict with a score
    await audit_clean(conn)


async def test_the_builtin_scorer_counts_a_bot_and_scores_it(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    """The default hook with an event's thresholds unset: every verdict is low (nobody
    slowed), while the scores show what the thresholds would do."""
    app = build_api_app(make_settings(db_url, redis_url=valkey.url))
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await queue_event(api)
        accounts = await new_accounts(conn, 3)
        for account in accounts:
            assert (await bot_join(api, account, event_id)).status_code == 200
        async with api.client() as anon:
            text = (await anon.get("/metrics")).text
        assert sample(text, "onsale_risk_verdicts_total", band="low") == 3.0
        assert sample(text, "onsale_risk_score_count") == 3.0
        assert (sample(text, "onsale_risk_score_sum") or 0) >= 3 * 30  # an HTTP library
    await audit_clean(conn)


async def test_an_events_thresholds_set_by_its_operator_slow_then_refuse_a_bot(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    """The built-in scorer against thresholds set with PATCH .../queue: a bot's join
    (scored 30 or more for its HTTP library alone) asks for more work past ``raised``,
    and is refused past ``refused``; thresholds that do not ascend are a 400 and change
    nothing; all null turns the bands off again."""
    app = build_api_app(make_settings(db_url, redis_url=valkey.url))
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await queue_event(api)
        path = f"/api/ops/events/{event_id}/queue"

        async def patch(body: dict[str, Any]) -> httpx.Response:
            async with api.client() as c:
                return await c.patch(path, json=body, headers=ADMIN)

        r = await patch({"risk": {"raised": 20}})
        assert r.status_code == 200, r.text
        assert r.json()["settings"]["risk"] == {"raised": 20, "high": None, "refused": None}
        first, second, third, fourth = await new_accounts(conn, 4)
        r = await bot_join(api, first, event_id)
        assert r.status_code == 403 and r.json()["code"] == "pow_required", r.text
        assert r.json()["difficulty"] >= RAISED_RISK_MIN_DIFFICULTY

        for wrong in ({"raised": 50, "high": 40}, {"high": 90, "refused": 90},
                      {"raised": 101}, {"refused": 0}):
            r = await patch({"risk": wrong})
            assert r.status_code == 400 and r.json()["code"] == "invalid_request", wrong
        async with api.client() as c:
            r = await c.get(path, headers=ADMIN)
        assert r.json()["settings"]["risk"]["raised"] == 20  # unchanged

        r = await patch({"risk": {"raised": 10, "high": 15, "refused": 20}})
        assert r.json()["settings"]["risk"] == {"raised": 10, "high": 15, "refused": 20}
        r = await bot_join(api, second, event_id)
        assert r.status_code == 403 and r.json()["code"] == "risk_refused", r.text
        assert await queued(api, event_id) == 0

        r = await patch({"risk": {}})
        assert r.json()["settings"]["risk"] == {"raised": None, "high": None, "refused": None}
        for account in (third, fourth):
            assert (await bot_join(api, account, event_id)).status_code == 200
        assert await queued(api, event_id) == 2
        async with api.client() as anon:
            text = (await anon.get("/metrics")).text
        assert sample(text, "onsale_risk_verdicts_total", band="raised") == 1.0
        assert sample(text, "onsale_risk_verdicts_total", band="refused") == 1.0
        assert sample(text, "onsale_risk_verdicts_total", band="low") == 2.0
    await audit_clean(conn)
