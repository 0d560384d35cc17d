"""The gate on sales routes: each bad admission is refused with its own code,
in core itself (a request that bypassed the edge is refused too), and core
without Redis fails closed."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import redis.asyncio

from onsale.compose import Tiers, app_for
from onsale.edge.tokens import AdmissionCodec, admission_keys
from onsale.embedded import EmbeddedValkey
from onsale.kernel.session_store import SessionStore
from tests.conftest import SECRET, Api, make_settings
from tests.integration.edge_support import (
    Visitor,
    admitter_for,
    edge_api,
    keys,
    new_accounts,
    refresh,
    tick_until,
)
from tests.sessions_support import mint_cookie
from tests.stack import eventually

KEYS = admission_keys("", SECRET)


async def hold_with(api: Api, account: uuid.UUID, event_id: int, token: str | None,
                    seats: list[int]) -> httpx.Response:
    headers = {"Idempotency-Key": uuid.uuid4().hex}
    if token is not None:
        headers["Admission-Token"] = token
    async with api.client(account, admit=False) as c:
        return await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": seats},
                            headers=headers)


def refused(r: httpx.Response, code: str) -> None:
    assert (r.status_code, r.json()["code"]) == (403, code), r.text
    assert r.headers["content-type"] == "application/problem+json"


async def test_forged_expired_foreign_and_revoked_tokens_are_refused_each_with_its_code(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_a = await api.create_event(seats=20)
        event_b = await api.create_event(seats=20)
        alice, bob = await new_accounts(conn, 2)
        phone = Visitor(api, alice, event_a)
        await phone.join()
        assert phone.state == "admitted" and phone.token is not None
        sid = AdmissionCodec(KEYS, 600).decode(phone.token)[1].session_id  # type: ignore[union-attr]

        refused(await hold_with(api, alice, event_a, None, [1]), "admission_required")
        forged = AdmissionCodec(["an-attacker-key-0123456789"], 600).issue(event_a, alice, sid)
        refused(await hold_with(api, alice, event_a, forged, [1]), "admission_invalid")
        refused(await hold_with(api, alice, event_a, phone.token[:-3] + "abc", [1]),
                "admission_invalid")
        issued_long_ago = AdmissionCodec(KEYS, 600, clock=lambda: time.time() - 3600)
        expired = issued_long_ago.issue(event_a, alice, sid)
        refused(await hold_with(api, alice, event_a, expired, [1]), "admission_expired")
        refused(await hold_with(api, bob, event_a, phone.token, [1]), "admission_wrong_account")
        refused(await hold_with(api, alice, event_b, phone.token, [1]), "admission_wrong_event")

        held = await hold_with(api, alice, event_a, phone.token, [1])
        assert held.status_code == 201, held.text
        # The same account enters on a laptop: the phone's session is revoked.
        laptop = Visitor(api, alice, event_a)
        await laptop.join()
        assert laptop.token is not None and laptop.token != phone.token
        # Revocation reaches every core process within the gate's cache time
        # (about a second); seat 1 is held, so an attempt that passes writes nothing.
        async def phone_refused() -> bool:
            r = await hold_with(api, alice, event_a, phone.token, [1])
            assert r.status_code in (403, 409), r.text
            return r.status_code == 403
        await eventually(phone_refused, within=10)
        refused(await hold_with(api, alice, event_a, phone.token, [2]), "admission_revoked")
        assert (await hold_with(api, alice, event_a, laptop.token, [2])).status_code == 201
        # The phone polling learns it, without taking the session back.
        assert (await phone.poll()).json()["state"] == "elsewhere"
        assert (await hold_with(api, alice, event_a, laptop.token, [3])).status_code == 201
        assert await redis_client.hget(keys(event_a).stats, "revoked") == b"1"

        # Checkout names a hold: the token must be for that hold's event.
        hold_id = held.json()["hold_id"]
        async with api.client(alice, admit=False) as c:
            no_token = await c.post(f"/api/holds/{hold_id}/checkout",
                                    json={"payment_method": "pm_card_visa"},
                                    headers={"Idempotency-Key": "c1"})
            other_event = await c.post(
                f"/api/holds/{hold_id}/checkout", json={"payment_method": "pm_card_visa"},
                headers={"Idempotency-Key": "c2", "Admission-Token": (
                    await api.admit(alice, event_b))["Admission-Token"]})
            passed = await c.post(
                f"/api/holds/{hold_id}/checkout", json={"payment_method": "pm_card_visa"},
                headers={"Idempotency-Key": "c3", "Admission-Token": laptop.token})
        refused(no_token, "admission_required")
        refused(other_event, "admission_wrong_event")
        # Past the gate: this app has no payment provider.
        assert (passed.status_code, passed.json()["code"]) == (503, "payments_unavailable")
        # The cookie works as well as the header (browsers).
        async with api.client(alice, admit=False) as c:
            c.cookies.set(f"onsale_admission_{event_a}", laptop.token)
            r = await c.post(f"/api/events/{event_a}/holds", json={"seat_ids": [4]},
                             headers={"Idempotency-Key": "cookie"})
        assert r.status_code == 201, r.text


async def test_an_idle_session_ends_and_its_token_with_it(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await api.create_event(seats=10)
        [alice] = await new_accounts(conn, 1)
        shopper = Visitor(api, alice, event_id)
        await shopper.join()
        # Last request eleven minutes ago (idle timeout: ten).
        old = int((await redis_client.time())[0] * 1000) - 660_000
        await redis_client.zadd(keys(event_id).active, {str(alice): old})
        admitter = admitter_for(api)

        async def swept() -> bool:
            return await redis_client.hget(keys(event_id).stats, "expired") == b"1"
        await tick_until(admitter, swept)
        api.app.state.core.admission.forget(event_id, alice)
        refused(await hold_with(api, alice, event_id, shopper.token, [1]), "admission_expired")
        await refresh(api)
        again = await shopper.join()  # passthrough: entering again starts a new session
        assert again.json()["state"] == "admitted"
        assert (await hold_with(api, alice, event_id, shopper.token, [1])).status_code == 201


async def test_core_without_redis_checks_signatures_then_fails_closed(
        db_url: str, conn: Any, valkey: EmbeddedValkey,
        redis_client: redis.asyncio.Redis) -> None:
    app = app_for(Tiers(core=True), make_settings(db_url))  # REDIS_URL unset
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await api.create_event(seats=10)
        [alice] = await new_accounts(conn, 1)
        # No session store either: nobody is signed in, on a guess or otherwise.
        no_sessions = await hold_with(api, alice, event_id, None, [1])
        assert (no_sessions.status_code, no_sessions.json()["code"]) == (
            503, "session_unavailable")
        assert no_sessions.headers["retry-after"] == "1"
        # Sessions in a Valkey of their own; the gate still has no waiting room.
        app.state.shared.sessions.attach(SessionStore(redis_client))
        api.sessions_settings = make_settings(db_url, redis_url=valkey.url)
        good = AdmissionCodec(KEYS, 600).issue(event_id, alice, "s1")
        refused(await hold_with(api, alice, event_id, None, [1]), "admission_required")
        forged = AdmissionCodec(["an-attacker-key-0123456789"], 600).issue(event_id, alice, "s")
        refused(await hold_with(api, alice, event_id, forged, [1]), "admission_invalid")
        unverifiable = await hold_with(api, alice, event_id, good, [1])
        assert (unverifiable.status_code, unverifiable.json()["code"]) == (
            503, "admission_unavailable")
        assert await conn.fetchval("SELECT count(*) FROM holds") == 0


async def test_core_alone_refuses_a_request_that_bypassed_the_edge(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    """A signed token whose session the waiting room never created (a leaked
    key, or a replay after Redis lost it) is refused by core."""
    app = app_for(Tiers(core=True), make_settings(db_url, redis_url=valkey.url))
    async with app.router.lifespan_context(app):
        api = Api(app)
        event_id = await api.create_event(seats=10)
        [alice] = await new_accounts(conn, 1)
        minted = AdmissionCodec(KEYS, 600).issue(event_id, alice, "never-issued")
        refused(await hold_with(api, alice, event_id, minted, [1]), "admission_expired")
        refused(await hold_with(api, alice, event_id, None, [1]), "admission_required")


async def test_a_signed_out_cookie_sees_its_place_but_claims_nothing(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    """The poll reads only the session cookie's signature (no Redis while waiting),
    so a copy of a signed-out cookie still sees its place. Reaching the front is
    different: claiming the shopping session and handing out an admission token
    need a live session (issue 21)."""
    async with edge_api(db_url, valkey.url) as api:
        event_id = await api.create_event(queue_policy="fifo", admission_rate_min=60_000,
                                          admission_rate_max=60_000, seats=20)
        alice, bob, carol = await new_accounts(conn, 3)
        shoppers = [Visitor(api, a, event_id) for a in (alice, bob, carol)]
        for visitor in shoppers:
            assert (await visitor.join()).status_code == 200

        async def sign_out(account: uuid.UUID) -> None:
            async with api.client(account, admit=False) as c:
                assert (await c.delete("/api/session")).status_code == 204

        # While waiting, a signed-out copy still reads its place (no Redis on a poll).
        await sign_out(carol)
        waiting = await shoppers[2].poll()
        assert waiting.status_code == 200 and waiting.json()["state"] == "waiting"

        async def admitted(account: uuid.UUID) -> bool:
            return await redis_client.zscore(keys(event_id).pending, str(account)) is not None
        await tick_until(admitter_for(api), lambda: admitted(carol))
        await refresh(api)
        # Alice claims her session and holds a token before signing out; Bob and
        # Carol are admitted but have not claimed theirs yet.
        assert (await shoppers[0].poll()).json()["state"] == "admitted"
        assert shoppers[0].token is not None
        await sign_out(alice)
        await sign_out(bob)
        # The copies: the same session cookie and ticket (and Alice's admission token).
        for visitor in shoppers:
            before = await redis_client.hget(keys(event_id).sess, str(visitor.account))
            r = await visitor.poll()
            assert (r.status_code, r.json()["code"]) == (401, "authentication_required"), r.text
            assert "admission_token" not in r.json()
            assert not any(c.startswith("onsale_admission_") for c in r.cookies)
            assert await redis_client.hget(keys(event_id).sess, str(visitor.account)) == before
        for account in (bob, carol):  # still waiting for a live session to claim it
            assert await admitted(account)
            assert await redis_client.hget(keys(event_id).sess, str(account)) is None

        # Bob signs in again (a new session): the same ticket claims and is admitted.
        fresh = mint_cookie(api.app.state.shared.settings, bob)
        async with httpx.AsyncClient(
                transport=api.transport, base_url="http://test",
                cookies={api.app.state.shared.sessions.cookie_name: fresh}) as c:
            live = await c.get(f"/api/events/{event_id}/queue",
                               headers={"Queue-Ticket": shoppers[1].ticket or ""})
        assert live.status_code == 200 and live.json()["state"] == "admitted", live.text
        assert live.json()["admission_token"]
        assert await redis_client.hget(keys(event_id).sess, str(bob)) is not None
        assert not await admitted(bob)
