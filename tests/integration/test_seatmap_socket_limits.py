"""The seat-map socket's limits, as the ``seatmap`` role serves it under a real uvicorn
(docs/security.md#websockets, docs/seatmap-protocol.md#close-codes): a socket closes
when its admission expires or is revoked, a client that sends too much or too often
is closed, a foreign Origin and an account over its socket cap are refused."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from onsale.compose import build_app
from onsale.embedded import EmbeddedValkey
from onsale.kernel.sessions import COOKIE
from onsale.seatmap.bus import Bus
from onsale.seatmap.sockets import CLOSE_EXPIRED, CLOSE_POLICY, CLOSE_REVOKED, CLOSE_TOO_BIG
from tests.conftest import Api, make_settings
from tests.integration.edge_support import Visitor, edge_api, new_accounts
from tests.seatmap_support import consumer, seatmap_settings, serving
from tests.stack import eventually


def _headers(api: Api, account: uuid.UUID, token: str | None,
             origin: str | None = None) -> dict[str, str]:
    headers = {"Cookie": f"{COOKIE}={api.session_cookie(account)}"}
    if token is not None:
        headers["Admission-Token"] = token
    if origin is not None:
        headers["Origin"] = origin
    return headers


class Socket:
    """A seat-map socket that keeps reading, and records how it was closed."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.kinds: list[str] = []
        self.code: int | None = None
        self.reason = ""
        self.task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        import gzip

        try:
            async for raw in self.ws:
                text = gzip.decompress(raw).decode() if isinstance(raw, bytes) else raw
                self.kinds.append(json.loads(text)["type"])
        except ConnectionClosed:
            pass
        finally:
            self.reason = self.ws.close_reason or ""
            self.code = self.ws.close_code

    async def closed(self) -> bool:
        return self.code is not None

    async def close(self) -> None:
        await self.ws.close()
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task


@contextlib.asynccontextmanager
async def seatmap_role(db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
                       event_id: int, *, ws_max_size: int | None = None,
                       **overrides: Any) -> AsyncIterator[str]:
    """The seatmap role (admission gate on) with change capture, once the event's
    seat map is in Redis (so a socket stays open)."""
    settings = seatmap_settings(admission_check_s=1, **overrides)
    app = build_app("seatmap", make_settings(db_url, redis_url=valkey.url), seatmap=settings)
    try:
        async with consumer(db_url, valkey.url, settings), serving(
                app, ws_max_size=ws_max_size) as address:
            await eventually(lambda: Bus(redis_client).snapshot_blob(event_id), within=30)
            yield address
    finally:  # later tests on this Valkey expect no seat maps they did not make
        await redis_client.flushdb()


async def open_socket(address: str, event_id: int, headers: dict[str, str]) -> Socket:
    ws = await connect(f"ws://{address}/ws/events/{event_id}/seatmap",
                       additional_headers=headers, max_size=None)
    socket = Socket(ws)
    await eventually(lambda: _said(socket, "snapshot"), within=10)
    return socket


async def _said(socket: Socket, kind: str) -> bool:
    return kind in socket.kinds


async def refusal(address: str, event_id: int, headers: dict[str, str]) -> tuple[int, str]:
    with pytest.raises(InvalidStatus) as denied:
        await connect(f"ws://{address}/ws/events/{event_id}/seatmap",
                      additional_headers=headers)
    response = denied.value.response
    return response.status_code, json.loads(response.body or b"{}").get("code", "")


async def test_a_socket_closes_when_its_admission_is_revoked_or_expires(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url, admission_ttl_seconds=4) as api:
        event_id = await api.create_event(seats=30)
        alice, bob = await new_accounts(conn, 2)
        phone, bobs = Visitor(api, alice, event_id), Visitor(api, bob, event_id)
        await phone.join()
        await bobs.join()
        assert phone.token and bobs.token
        async with seatmap_role(db_url, valkey, redis_client, event_id) as address:
            on_phone = await open_socket(address, event_id, _headers(api, alice, phone.token))
            on_bobs = await open_socket(address, event_id, _headers(api, bob, bobs.token))
            # Alice enters on her laptop: the phone's session is revoked.
            laptop = Visitor(api, alice, event_id)
            await laptop.join()
            assert laptop.token is not None and laptop.token != phone.token
            await eventually(on_phone.closed, within=10)
            assert (on_phone.code, on_phone.reason) == (CLOSE_REVOKED, "admission_revoked")
            # Bob's token lives 4 s; nothing renews it: his socket closes after that.
            await eventually(on_bobs.closed, within=15)
            assert (on_bobs.code, on_bobs.reason) == (CLOSE_EXPIRED, "admission_expired")
            # And the refused tokens cannot open another one (the phone's, revoked, has
            # expired by now as well).
            assert await refusal(address, event_id, _headers(api, alice, phone.token)) in (
                (403, "admission_revoked"), (403, "admission_expired"))
            assert await refusal(address, event_id, _headers(api, bob, bobs.token)) == (
                403, "admission_expired")
            await on_phone.close()
            await on_bobs.close()


async def test_signing_out_closes_the_socket(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await api.create_event(seats=30)
        (carol,) = await new_accounts(conn, 1)
        visitor = Visitor(api, carol, event_id)
        await visitor.join()
        assert visitor.token
        async with seatmap_role(db_url, valkey, redis_client, event_id) as address:
            socket = await open_socket(address, event_id, _headers(api, carol, visitor.token))
            await asyncio.sleep(1.5)
            assert not await socket.closed()  # admitted and signed in: it stays open
            # Carol signs out (another process: the API's); the seat map notices.
            await api.app.state.shared.sessions.revoke(api.session_cookie(carol))
            await eventually(socket.closed, within=10)
            assert (socket.code, socket.reason) == (CLOSE_EXPIRED, "authentication_required")
            await socket.close()


@pytest.mark.parametrize("protocol_cap", [False, True], ids=["app", "protocol"])
async def test_a_client_that_sends_too_much_or_too_often_is_closed(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis, conn: Any,
        protocol_cap: bool) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await api.create_event(seats=30)
        (alice,) = await new_accounts(conn, 1)
        visitor = Visitor(api, alice, event_id)
        await visitor.join()
        headers = _headers(api, alice, visitor.token)
        # "protocol": uvicorn refuses the frame itself (ws_max_size, as onsale serve sets it).
        async with seatmap_role(db_url, valkey, redis_client, event_id,
                                ws_max_size=16 if protocol_cap else None,
                                client_max_messages_per_s=5) as address:
            small = await open_socket(address, event_id, headers)
            await small.ws.send("ping")  # a few bytes now and then are fine
            await asyncio.sleep(0.2)
            assert small.code is None
            await small.ws.send("x" * 17)
            await eventually(small.closed, within=10)
            assert small.code == CLOSE_TOO_BIG
            await small.close()

            flood = await open_socket(address, event_id, headers)
            with contextlib.suppress(ConnectionClosed):
                for _ in range(50):
                    await flood.ws.send("x")
            await eventually(flood.closed, within=10)
            assert flood.code == CLOSE_POLICY
            await flood.close()


async def test_foreign_origins_and_sockets_over_the_cap_are_refused(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await api.create_event(seats=30)
        alice, bob = await new_accounts(conn, 2)
        visitors = [Visitor(api, a, event_id) for a in (alice, bob)]
        for v in visitors:
            await v.join()
        a_headers = _headers(api, alice, visitors[0].token)
        async with seatmap_role(db_url, valkey, redis_client, event_id,
                                max_sockets_per_account=2) as address:
            # ONSALE_PUBLIC_URL is http://127.0.0.1:8000 in the tests.
            assert await refusal(address, event_id, {
                **a_headers, "Origin": "https://evil.example"}) == (403, "cross_site_request")
            assert await refusal(address, event_id, {**a_headers, "Origin": "null"}) == (
                403, "cross_site_request")
            first = await open_socket(address, event_id,
                                      {**a_headers, "Origin": "http://127.0.0.1:8000"})
            second = await open_socket(address, event_id,
                                       {**a_headers, "Origin": "http://localhost:8000"})
            assert await refusal(address, event_id, a_headers) == (429, "too_many_sockets")
            bobs = await open_socket(address, event_id,
                                     _headers(api, bob, visitors[1].token))  # his own cap
            await first.close()

            async def third_opens() -> Socket | None:
                try:
                    return await open_socket(address, event_id, a_headers)
                except InvalidStatus:
                    return None

            third = await eventually(third_opens, within=10)
            for s in (second, third, bobs):
                assert s.code is None
                await s.close()
