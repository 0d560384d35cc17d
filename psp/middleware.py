"""Fault injection around the API, as a raw ASGI middleware.

``latency``: sleep, then process. ``timeout``: process, then hang before
answering (or until the client gives up). ``lost_response``: process, then
close the connection without any HTTP response. ``error_500``: answer 500
without processing. ``wrong_amount``, ``wrong_currency``, ``wrong_id``: process,
then answer with the intent altered (``psp.faults.tampered``). Only authenticated
requests to the five API operations draw from the rules (``psp.faults.classify``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import random
from collections.abc import Callable
from typing import Any

from onsale.kernel.logs import REQUEST_ID, plausible_id
from onsale.psp import errors, events, faults
from onsale.psp.faults import FaultState

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Message], Any]
App = Callable[[Scope, Receive, Send], Any]

DISCONNECT_WAIT = 5.0
# Every response says it comes from the simulator: core refuses to take it for a
# real provider unless ONSALE_ALLOW_SIMULATOR is set (docs/security.md).
SIMULATOR_HEADER = (b"onsale-simulator", b"1")


class SimulatorHeader:
    """Adds ``Onsale-Simulator: 1`` to every HTTP response of the app it wraps, and
    Stripe's ``Request-Id: req_…`` (the id is also in the scope, ``psp.request_id``,
    for the events the request causes) and ``Stripe-Version``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        request_id = events.new_id("req")
        scope["psp.request_id"] = request_id
        # The log lines of this request name the caller's X-Request-ID (core sends its
        # request's), else the simulator's own id.
        caller = next((v for k, v in scope["headers"] if k == b"x-request-id"), b"")
        REQUEST_ID.set(plausible_id(caller.decode("latin-1")) or request_id)
        extra = [SIMULATOR_HEADER, (b"request-id", request_id.encode()),
                 (b"stripe-version", events.API_VERSION.encode())]

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        await self.app(scope, receive, marked)


class ResponseLost(ConnectionResetError):
    """Raised where the server's transport is out of reach (in-process transports):
    the caller sees an exception instead of a response, as a client would."""


class FaultMiddleware:
    def __init__(self, app: App, api_key: str, state: Callable[[], FaultState],
                 rng: random.Random) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode()
        self.state = state
        self.rng = rng

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        rule = self._rule(scope) if scope["type"] == "http" else None
        if rule is None:
            await self.app(scope, receive, send)
        elif rule.fault == "latency":
            await asyncio.sleep(rule.ms / 1000)
            await self.app(scope, receive, send)
        elif rule.fault == "error_500":
            await _answer_500(send)
        elif rule.fault == "timeout":
            await self._timeout(scope, receive, send, rule.ms / 1000)
        elif rule.fault in faults.WRONG:
            await self._wrong(scope, receive, send, rule.fault)
        else:
            await self._lost(scope, receive, send)

    def _rule(self, scope: Scope) -> faults.Rule | None:
        op = faults.classify(scope["method"], scope["path"])
        if op is None:
            return None
        authorization = dict(scope["headers"]).get(b"authorization", b"")
        if not hmac.compare_digest(authorization, self.expected):
            return None  # the app answers 401; a fault is not spent on it
        return self.state().pick(op, self.rng)

    async def _timeout(self, scope: Scope, receive: Receive, send: Send,
                       seconds: float) -> None:
        held: list[Message] = []

        async def hold(message: Message) -> None:
            held.append(message)

        await self.app(scope, receive, hold)
        if await _disconnected_within(receive, seconds):
            return
        for message in held:
            await send(message)

    async def _wrong(self, scope: Scope, receive: Receive, send: Send, fault: str) -> None:
        held: list[Message] = []

        async def hold(message: Message) -> None:
            held.append(message)

        await self.app(scope, receive, hold)
        start = next((m for m in held if m["type"] == "http.response.start"), None)
        if start is None:
            return
        raw = b"".join(m.get("body", b"") for m in held if m["type"] == "http.response.body")
        try:
            body = json.dumps(faults.tampered(fault, json.loads(raw))).encode()
        except ValueError:
            body = raw
        headers = [(k, v) for k, v in start.get("headers", ()) if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers,
                                         (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def _lost(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def discard(message: Message) -> None:
            return None

        await self.app(scope, receive, discard)
        # uvicorn answers 500 for an app that returns without a response unless
        # the client is gone, so close the connection and wait to hear it go.
        transport = getattr(getattr(send, "__self__", None), "transport", None)
        if transport is None or not hasattr(transport, "close"):
            raise ResponseLost("the simulator dropped the response (lost_response fault)")
        transport.close()
        await _disconnected_within(receive, DISCONNECT_WAIT)


async def _disconnected_within(receive: Receive, seconds: float) -> bool:
    """Whether the client hung up within ``seconds`` (the request body is read)."""
    async def until_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await until_disconnect()
            return True
    return False


async def _answer_500(send: Send) -> None:
    body = json.dumps(errors.api_error().body()).encode()
    await send({"type": "http.response.start", "status": 500, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        SIMULATOR_HEADER]})
    await send({"type": "http.response.body", "body": body})


TOKENIZE_PATH = "/v1/payment_methods"
_CORS = [(b"access-control-allow-origin", b"*")]


class BrowserTokenization:
    """Lets a checkout page on another origin tokenize a card here, as Stripe's API
    lets Stripe.js: ``POST /v1/payment_methods`` answers with
    ``Access-Control-Allow-Origin: *`` (the publishable key authorizes it, no cookie
    is involved), and its preflight ``OPTIONS`` is answered without reaching a route."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != TOKENIZE_PATH:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            await send({"type": "http.response.start", "status": 204, "headers": [
                *_CORS, (b"access-control-allow-methods", b"POST"),
                (b"access-control-allow-headers", b"authorization, content-type"),
                (b"access-control-max-age", b"600")]})
            await send({"type": "http.response.body", "body": b""})
            return

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *_CORS]
            await send(message)

        await self.app(scope, receive, with_cors)
