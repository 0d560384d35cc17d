"""How every onsale listener is served: uvicorn with the bounded, corked protocol
(``onsale.kernel.http_protocol``), the cap on requests in progress, and quiet client
disconnects. Used by ``onsale dev``/``serve`` and by ``onsale psp``."""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import ClientDisconnect

from onsale.kernel.http_limits import HttpLimits, large_answer, refusal_body
from onsale.kernel.http_protocol import protocol_class
from onsale.kernel.http_writes import CHUNK, UnsentLedger

log = logging.getLogger("onsale.http")


class RequestLimit:
    """At most ``limit`` HTTP requests in progress in this process; past it, 503 with
    ``Retry-After`` at once (the connection stays open). WebSockets are not counted
    here: they live long, and the seat map caps them itself.

    A request whose client went away while its body was read (including one cut off
    by the body limit) ends quietly: there is nobody to answer, and no traceback.
    """

    def __init__(self, app: Any, limit: int, ledger: UnsentLedger | None = None) -> None:
        self.app = app
        self.limit = limit
        self.in_progress = 0
        self.ledger = ledger

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_progress >= self.limit:
            await _overloaded(send)
            return
        ledger = self.ledger
        if ledger is not None and ledger.over():  # only then is each answer looked at
            send = _small_answers_only(send, ledger)
        self.in_progress += 1
        try:
            await self.app(scope, receive, send)
        except ClientDisconnect:
            log.debug("client went away during %s %s", scope.get("method"), scope.get("path"))
        finally:
            self.in_progress -= 1


async def _overloaded(send: Any) -> None:
    body = refusal_body(503)
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(body)).encode()), (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body})


def _small_answers_only(send: Any, ledger: UnsentLedger) -> Any:
    """``send`` for a request that arrived while the server held more unread answers
    than its cap: a large answer is replaced by ``503 overloaded`` (what the app sends
    after its head is dropped); a small one goes through."""
    refused = False

    async def guarded(message: Any) -> None:
        nonlocal refused
        if refused:
            return
        if (message["type"] == "http.response.start" and ledger.over()
                and large_answer(message.get("headers", []), CHUNK)):
            refused = True
            ledger.refused += 1
            log.info("large answer refused: %d bytes unread on this server", ledger.total)
            await _overloaded(send)
            return
        await send(message)
    return guarded


def uvicorn_config(app: Any, host: str, port: int, limits: HttpLimits, *, counted: bool = True,
                   **extra: Any) -> Any:
    """A ``uvicorn.Config`` with onsale's protocol and limits (``extra`` passes through);
    ``counted``: its unsent bytes in ``/metrics`` (the public listeners')."""
    import uvicorn

    ledger = UnsentLedger(limits.max_unsent_bytes, counted=counted)
    return uvicorn.Config(
        RequestLimit(app, limits.max_requests, ledger), host=host, port=port,
        http=protocol_class(limits, ledger), timeout_keep_alive=limits.keepalive_timeout,  # type: ignore[arg-type]
        limit_concurrency=None, h11_max_incomplete_event_size=limits.max_head_bytes,
        **extra)
