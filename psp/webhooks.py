"""Webhook delivery: a background task drains the persistent queue; each delivery
is its own task (so events may arrive out of order), signed at send time, retried
with exponential backoff after a non-2xx answer, a connection error or a timeout.
Sent with ``psp.http_post`` (or httpx over an injected transport)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import Callable
from typing import Protocol

import httpx

from onsale.kernel.logs import plausible_id
from onsale.psp import faults, signature
from onsale.psp.config import PspConfig
from onsale.psp.faults import WebhookFaults
from onsale.psp.http_post import Poster
from onsale.psp.middleware import SIMULATOR_HEADER
from onsale.psp.store import QueuedEvent, Store

log = logging.getLogger("psp.webhooks")
MAX_IN_FLIGHT = 128
IDLE_WAIT = 1.0


class Dispatcher:
    def __init__(self, store: Store, config: PspConfig,
                 webhook_faults: Callable[[], WebhookFaults], rng: random.Random,
                 poster: Post) -> None:
        self.store = store
        self.config = config
        self.webhook_faults = webhook_faults
        self.rng = rng
        self.poster = poster
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.Task[None] | None = None

    def start(self) -> None:
        with self.store.transaction():
            self.store.release_leases()
        self._loop = asyncio.create_task(self._run(), name="psp-webhooks")

    async def stop(self) -> None:
        """Cancel everything; cut-short deliveries stay queued for the next start."""
        tasks = [*self._tasks, *([self._loop] if self._loop is not None else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.poster.aclose()

    def notify(self) -> None:
        """New events were committed, or the faults changed."""
        self._wake.set()

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                wait = self._dispatch()
            except Exception:  # e.g. a locked or full disk: try again shortly
                log.exception("webhook dispatch failed")
                wait = IDLE_WAIT
            if wait > 0:
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._wake.wait()

    def _dispatch(self) -> float:
        """Start the due deliveries; return how long to sleep if nothing wakes us."""
        settings = self.webhook_faults()
        room = MAX_IN_FLIGHT - len(self._tasks)
        if settings.paused or room <= 0:
            return IDLE_WAIT
        now = time.time()
        with self.store.transaction():
            due = self.store.claim_due(now, room)
            next_due = self.store.next_due()
        if settings.shuffle:
            self.rng.shuffle(due)
        for event in due:
            task = asyncio.create_task(self._deliver(event), name=f"psp-webhook-{event.id}")
            self._tasks.add(task)
            task.add_done_callback(self._done)
        if len(due) == room:
            return IDLE_WAIT  # full: a finishing delivery wakes us
        if next_due is None:
            return IDLE_WAIT
        return min(max(next_due - now, 0.0), IDLE_WAIT)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._wake.set()
        if not task.cancelled() and task.exception() is not None:
            # the event stays leased until the next start, which sends it again
            log.error("webhook delivery failed", exc_info=task.exception())

    async def _deliver(self, event: QueuedEvent) -> None:
        settings = self.webhook_faults()
        attempt = event.attempts + 1
        if event.attempts == 0 and settings.delay_ms:
            await asyncio.sleep(settings.delay_ms / 1000)
        status: int | None = None
        error: str | None = None
        delivered = 0
        if faults.simulated_failure(attempt, settings):
            error = "simulated failure (fail_first)"
        else:
            status, error = await self._post(event)
            if _ok(status):
                delivered = 1
                if faults.duplicated(settings, self.rng):
                    again, _ = await self._post(event)
                    delivered += int(_ok(again))
        now = time.time()
        if _ok(status):
            state, next_at = "delivered", now
        elif attempt >= self.config.webhook_max_attempts:
            state, next_at = "failed", now
        else:
            state = "pending"
            next_at = now + faults.backoff(attempt, self.config.webhook_backoff_base,
                                           self.config.webhook_backoff_cap)
        with self.store.transaction():
            self.store.record_attempt(event.id, attempts=attempt, state=state,
                                      next_attempt_at=next_at, last_status=status,
                                      last_error=error, deliveries=delivered, now=now)

    async def _post(self, event: QueuedEvent) -> tuple[int | None, str | None]:
        header = signature.sign(self.config.webhook_secret, event.body, time.time())
        headers = {"Content-Type": "application/json", signature.HEADER: header,
                   "User-Agent": "onsale-psp-simulator", SIMULATOR_HEADER[0].decode(): "1"}
        rid = purchase_request_id(event.body)
        if rid is not None:  # the request that created the intent (core's checkout)
            headers["X-Request-ID"] = rid
        try:
            status = await self.poster.post(event.body, headers)
        except Exception as exc:  # refused, reset, timed out, not HTTP: a failed attempt
            return None, f"{type(exc).__name__}: {exc}"[:500]
        return status, None


def purchase_request_id(body: bytes) -> str | None:
    """The ``request_id`` in the metadata of the event's object, if it has one."""
    try:
        metadata = json.loads(body)["data"]["object"].get("metadata")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return plausible_id(metadata.get("request_id")) if isinstance(metadata, dict) else None


class Post(Protocol):
    async def post(self, body: bytes, headers: dict[str, str]) -> int: ...

    async def aclose(self) -> None: ...


class HttpxPost:
    """Delivery through httpx, for an injected transport (tests: httpx.MockTransport)."""

    def __init__(self, url: str, timeout: float, transport: httpx.AsyncBaseTransport) -> None:
        self.url = url
        self.client = httpx.AsyncClient(transport=transport, timeout=timeout)

    async def post(self, body: bytes, headers: dict[str, str]) -> int:
        return (await self.client.post(self.url, content=body, headers=headers)).status_code

    async def aclose(self) -> None:
        await self.client.aclose()


def poster(config: PspConfig, transport: httpx.AsyncBaseTransport | None = None) -> Post:
    assert config.webhook_url is not None
    if transport is not None:
        return HttpxPost(config.webhook_url, config.webhook_timeout, transport)
    return Poster(config.webhook_url, config.webhook_timeout)


def _ok(status: int | None) -> bool:
    return status is not None and 200 <= status < 300
