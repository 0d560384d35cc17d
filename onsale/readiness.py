"""``GET /readyz`` on every role's ops listener (docs/operations.md#the-ops-listener):
each dependency the process uses, asked now, and whether the process should get traffic.

A process is *unavailable* (503) only when a dependency it cannot serve without is down,
the same for every process of its role: core and the worker without the directory's
database, the edge and the seat map without Valkey, the change capture without either.
Anything else that is down (another shard, Valkey for core, the payment provider) makes
it *degraded* (200): every process of the role would be taken out together, and each
still serves what does not need it (the events of the other shards; a checkout whose
payment stays unknown until the reconciler settles it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from onsale.kernel.problems import Problem, ProblemResponse
from onsale.kernel.shards import shard_readiness

OK = "ok"
UNAVAILABLE = "unavailable"
DIRECTORY = "database"  # shard 1, the directory's database
VALKEY = "valkey"
PROVIDER = "provider"
PROVIDER_CACHE_SECONDS = 10.0  # a probe every few seconds must not become an API call each


def verdict(report: Mapping[str, str], needed: Collection[str]) -> tuple[int, str]:
    """(HTTP status, ``ready`` | ``degraded`` | ``unavailable``) for what each dependency
    answered; ``needed`` are those without which the process serves nothing."""
    if any(report.get(name, OK) != OK for name in needed):
        return 503, "unavailable"
    if any(answer != OK for answer in report.values()):
        return 200, "degraded"
    return 200, "ready"


def needed_by(*, core: bool, edge: bool, seatmap: bool, capture: bool,
              background: bool) -> frozenset[str]:
    """The dependencies a process of these tiers cannot serve without."""
    needed = set()
    if core or background or capture:
        needed.add(DIRECTORY)
    if edge or seatmap or capture:
        needed.add(VALKEY)
    return frozenset(needed)


class ProviderProbe:
    """Whether the payment provider answers HTTP at all (any status: a 401 or 404 is an
    answer), asked at most every ``PROVIDER_CACHE_SECONDS``."""

    def __init__(self, base_url: str, timeout: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._clock = clock
        self._answer: tuple[float, str] | None = None

    async def __call__(self) -> str:
        now = self._clock()
        if self._answer is not None and now - self._answer[0] < PROVIDER_CACHE_SECONDS:
            return self._answer[1]
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                await client.get(f"{self.base_url}/")
            answer = OK
        except httpx.HTTPError:
            answer = UNAVAILABLE
        self._answer = (now, answer)
        return answer


async def _answer(check: Callable[[], Awaitable[Any]], seconds: float) -> str:
    try:
        async with asyncio.timeout(seconds):
            await check()
    except Exception:  # a Problem from the breaker, a timeout, a refused connection
        return UNAVAILABLE
    return OK


def readyz_route(needed: frozenset[str], provider: ProviderProbe | None,
                 timeout: float = 2.0) -> Callable[[Request], Awaitable[Response]]:
    """The handler: the app's shared parts (``app.state.shared``), asked together."""

    async def readyz(request: Request) -> Response:
        shared = request.app.state.shared
        report: dict[str, str] = {}
        if shared.shards is not None:
            shards = await shard_readiness(shared.shards)
            report[DIRECTORY] = shards.pop("1", UNAVAILABLE)
            report.update({f"shard {n}": answer for n, answer in shards.items()})
        if shared.redis is not None:
            report[VALKEY] = await _answer(shared.redis.ping, timeout)
        if provider is not None:
            report[PROVIDER] = await provider()
        status, word = verdict(report, needed)
        if status == 503:
            code = "inventory_unavailable" if report.get(DIRECTORY, OK) != OK else (
                "queue_unavailable")
            return ProblemResponse(Problem(503, code, checks=report),
                                   headers={"Retry-After": "1"})
        return JSONResponse({"status": word, "checks": report})

    return readyz
