"""The gate in front of every sales route: a valid admission token for this
event and this account, from the session that is still the account's current
one. Core's hold and checkout routes call ``Gate.check`` before any other
work (defence in depth: a request that bypassed the edge is refused as well);
the seat map calls it through ``edge.seatmap_gate``.

Signature, expiry, event and account are checked without I/O. Revocation
needs the account's current session from Redis: answers are cached for at
most ``cache_seconds`` (a revoked token may work for that long), and a
mismatch is always confirmed with Redis before refusing, so a session that
was just created elsewhere is never refused by a stale cache. Without Redis
(REDIS_URL unset or unreachable) the gate fails closed: 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable

from starlette.requests import HTTPConnection

from onsale.edge.caches import Marks, every
from onsale.edge.queue_store import ADMISSION_STORE_DOWN, QueueStore
from onsale.edge.tokens import (
    ADMISSION_COOKIE,
    ADMISSION_HEADER,
    Admission,
    AdmissionCodec,
    Verdict,
    admission_cookie,
    admission_keys,
)
from onsale.kernel.config import Settings
from onsale.kernel.cookies import settings_cookie_policy
from onsale.kernel.logs import bind
from onsale.kernel.problems import Problem
from onsale.kernel.valkey import RedisClient

COOKIE_PREFIX = ADMISSION_COOKIE


class Gate:
    def __init__(self, codec: AdmissionCodec, store: QueueStore | None, *,
                 cache_seconds: float = 1.0, max_entries: int = 100_000,
                 clock: Callable[[], float] = time.monotonic, cookie_prefix: str = "") -> None:
        self.codec = codec
        self.cookie_prefix = cookie_prefix  # kernel.cookies.cookie_policy(...).prefix
        self.store = store
        self.cache_seconds = cache_seconds
        self.max_entries = max_entries
        self._clock = clock
        self._cache: OrderedDict[tuple[int, uuid.UUID], tuple[str | None, float]] = OrderedDict()
        self._inflight: dict[tuple[int, uuid.UUID], asyncio.Future[str | None]] = {}
        self.marks = Marks(store, "active") if store is not None else None
        self._task: asyncio.Task[None] | None = None

    def token(self, request: HTTPConnection, event_id: int) -> str | None:
        """The ``Admission-Token`` header (API clients), else the event's cookie
        (named as ``edge.routes`` sets it: ``__Host-`` prefixed over https)."""
        return request.headers.get(ADMISSION_HEADER) or request.cookies.get(
            admission_cookie(event_id, self.cookie_prefix))

    @staticmethod
    def presented(request: HTTPConnection) -> bool:
        """Whether the request carries any admission token at all."""
        return ADMISSION_HEADER in request.headers or any(
            name.removeprefix("__Host-").startswith(COOKIE_PREFIX) for name in request.cookies)

    def verdict(self, token: str | None, event_id: int,
                account: uuid.UUID) -> tuple[Verdict, Admission | None]:
        """The pure part of the check (no revocation)."""
        return self.codec.check(token, event_id, account)

    async def check(self, request: HTTPConnection, event_id: int, account: uuid.UUID) -> Admission:
        verdict, admission = self.verdict(self.token(request, event_id), event_id, account)
        if verdict is not Verdict.VALID or admission is None:
            raise Problem(403, verdict.code)
        current = await self.current_session(event_id, account, admission.session_id)
        if current is None:
            raise Problem(403, Verdict.EXPIRED.code,
                          detail="The shopping session ended; join the queue again.")
        if current != admission.session_id:
            raise Problem(403, Verdict.REVOKED.code,
                          detail="This account entered the sale on another device.")
        if self.marks is not None:
            self.marks.add(event_id, account, int(time.time() * 1000))
        if admission.request_id is not None:
            bind(admission=admission.request_id)
        return admission

    async def current_session(self, event_id: int, account: uuid.UUID,
                              expected: str | None = None) -> str | None:
        """The account's current session id (cached; a cached answer that
        differs from ``expected`` is re-read unless it is brand new)."""
        if self.store is None:
            raise Problem(503, "admission_unavailable",
                          detail="The waiting room store is not configured (REDIS_URL).")
        key = (event_id, account)
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None:
            value, fetched = cached
            age = now - fetched
            if age < self.cache_seconds and (value == expected or age < 0.05):
                return value
        flight = self._inflight.get(key)
        if flight is None:  # one Redis read for a burst of requests from one account
            flight = asyncio.ensure_future(self._read(key, now))
            self._inflight[key] = flight
            flight.add_done_callback(lambda _: self._inflight.pop(key, None))
        return await asyncio.shield(flight)

    async def _read(self, key: tuple[int, uuid.UUID], now: float) -> str | None:
        assert self.store is not None
        try:
            value = await self.store.session(*key)
        except Exception as exc:  # Redis down: refuse rather than guess
            raise Problem(503, "admission_unavailable", detail=ADMISSION_STORE_DOWN) from exc
        self._cache[key] = (value, now)
        self._cache.move_to_end(key)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return value

    async def current_sessions(self, pairs: list[tuple[int, uuid.UUID]]) -> list[str | None]:
        """``current_session`` for many (event, account) pairs, read fresh in one
        pipeline (the seat map's re-check of its open sockets); the cache learns them."""
        if self.store is None:
            raise Problem(503, "admission_unavailable",
                          detail="The waiting room store is not configured (REDIS_URL).")
        now = self._clock()
        try:
            values = await self.store.sessions(pairs)
        except Exception as exc:  # Redis down: refuse rather than guess
            raise Problem(503, "admission_unavailable", detail=ADMISSION_STORE_DOWN) from exc
        for key, value in zip(pairs, values, strict=True):
            self._cache[key] = (value, now)
            self._cache.move_to_end(key)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return values

    def forget(self, event_id: int, account: uuid.UUID) -> None:
        self._cache.pop((event_id, account), None)

    def start(self, interval: float = 1.0) -> None:
        """Write "seen" times of gated requests (keeps shoppers active) in batches."""
        if self.marks is not None and self._task is None:
            self._task = asyncio.create_task(every(interval, self.marks.flush, "gate marks"),
                                             name="onsale-gate-marks")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.marks is not None:
            with contextlib.suppress(Exception):
                await self.marks.flush()


def build_gate(settings: Settings, redis: RedisClient | None) -> Gate:
    """The process's one gate. Without Redis (REDIS_URL unset) it still checks
    signatures, then refuses: fail closed."""
    return Gate(AdmissionCodec(admission_keys(settings.admission_keys, settings.secret_key),
                               settings.admission_ttl_seconds),
                QueueStore(redis) if redis is not None else None,
                cookie_prefix=settings_cookie_policy(settings).prefix)


@contextlib.asynccontextmanager
async def running_gate(settings: Settings, redis: RedisClient | None) -> AsyncIterator[Gate]:
    gate = build_gate(settings, redis)
    gate.start()
    try:
        yield gate
    finally:
        await gate.stop()
