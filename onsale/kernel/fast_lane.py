"""The hottest routes, answered before Starlette's middleware stack and router
(docs/design.md#the-fast-lane).

A queue poll or a hold passes through about ten ASGI layers before its handler runs:
Starlette's error middleware, the security middleware, the exception middleware,
the router (a regular expression per route until one matches: the hold route is
the 21st of ``onsale dev``), the route and its request wrapper, each with a ``send``
closure on the way back. For a request whose handler does a few microseconds of
work, the layers cost more than the handler (bench/edge.py, docs/benchmarks.md).

``App`` is a Starlette app that first looks a request up in a small table of hot
routes and, on a match, runs the handler itself with the same guarantees the layers
give: the origin check on unsafe methods and the security headers
(``kernel.security.SecurityPolicy``), and the app's own exception handlers (a
``Problem`` is its problem+json, an outage its 503, a bug a logged 500). Everything
else (and every hot path on another method) goes through Starlette unchanged.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from onsale.kernel.http_metrics import UNMATCHED, HttpMetrics
from onsale.kernel.logs import REQUEST_ID, request_id_from
from onsale.kernel.ops_listener import TAG, refused
from onsale.kernel.problems import Problem, ProblemResponse
from onsale.kernel.responses import NoStoreJSON
from onsale.kernel.security import SecurityPolicy

log = logging.getLogger("onsale.http")
ACCESS = logging.getLogger("onsale.access")

Endpoint = Callable[[Request], Awaitable[Response]]
# A handler that answers from the raw scope alone, or says None: the endpoint's turn
# (with a Request). It must have done nothing the endpoint would do again.
Quick = Callable[[Scope], Response | None]
_PARAM = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class HotRoute:
    """``path`` in Starlette's syntax (``/api/events/{event_id}/queue``; each
    parameter one path segment, a string as Starlette's default convertor gives it)."""

    path: str
    method: str
    endpoint: Endpoint
    quick: Quick | None = None  # the common answer, without a Starlette Request
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = _PARAM.split(self.path)
        regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/]+)"
                        for i, p in enumerate(parts))
        object.__setattr__(self, "pattern", re.compile(regex))


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value  # type: ignore[no-any-return]
    return None


class App(Starlette):
    """Starlette, with ``hot`` routes served ahead of its middleware and router."""

    def __init__(self, *args: Any, hot: Sequence[HotRoute] = (),
                 policy: SecurityPolicy | None = None, http_metrics: HttpMetrics | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.http_metrics = http_metrics
        self.hot: dict[str, tuple[HotRoute, ...]] = {}
        for route in hot:
            self.hot[route.method] = (*self.hot.get(route.method, ()), route)
        self.policy = policy
        if self.hot and policy is None:
            raise ValueError("hot routes need the security policy of the app")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket" and refused(scope):  # no socket on the ops port
                await send({"type": "websocket.close", "code": 1008})
                return
            await super().__call__(scope, receive, send)
            return
        # The request id (kernel/logs.py): the client's X-Request-ID or a new one, in the
        # logs' context for this request, and echoed in the response.
        rid = request_id_from(_header(scope, b"x-request-id"))
        REQUEST_ID.set(rid)
        if TAG in scope and refused(scope):  # kernel/ops_listener.py: not on this port
            await self._not_here(scope, receive, send, rid)
        elif not ACCESS.disabled and ACCESS.isEnabledFor(logging.INFO):
            await self._logged(scope, receive, send, rid)
        else:
            await self._dispatch(scope, receive, send, rid)

    async def _not_here(self, scope: Scope, receive: Receive, send: Send, rid: str) -> None:
        response = ProblemResponse(Problem(404, "not_found"))
        if self.policy is not None:
            self.policy.add_headers(response.raw_headers)
        response.raw_headers.append((b"x-request-id", rid.encode()))
        await response(scope, receive, send)

    async def _logged(self, scope: Scope, receive: Receive, send: Send, rid: str) -> None:
        """The access log (ONSALE_ACCESS_LOG): one line per request once it is answered."""
        started, status = time.perf_counter(), [0]

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self._dispatch(scope, receive, send_status, rid)
        finally:
            ACCESS.info("%s %s %d %.1f ms", scope["method"], scope["path"], status[0],
                        (time.perf_counter() - started) * 1000)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send, rid: str) -> None:
        started = time.perf_counter()
        method = scope["method"]
        for route in self.hot.get(method, ()):
            match = route.pattern.fullmatch(scope["path"])
            if match is not None:
                scope["app"] = self
                scope["path_params"] = match.groupdict()
                status = await self._serve(route, scope, receive, send, rid)
                if self.http_metrics is not None:
                    self.http_metrics.observe(route.path, method, status,
                                              time.perf_counter() - started)
                return
        header = (b"x-request-id", rid.encode())
        answered = [500]  # unless the answer says otherwise (a bug that escaped)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), header]
                answered[0] = message["status"]
            await send(message)

        try:
            await super().__call__(scope, receive, send_with_id)
        finally:
            if self.http_metrics is not None:
                self.http_metrics.observe(getattr(scope.get("route"), "path", UNMATCHED),
                                          method, answered[0], time.perf_counter() - started)

    async def _serve(self, route: HotRoute, scope: Scope, receive: Receive, send: Send,
                     rid: str) -> int:
        policy = self.policy
        assert policy is not None
        refusal = policy.refusal(scope)
        response: Response | None = refusal
        if response is None and route.quick is not None:
            try:
                response = route.quick(scope)
            except Exception as exc:
                response = await self._handled(Request(scope, receive), exc)
        if response is None:
            request = Request(scope, receive)
            try:
                response = await route.endpoint(request)
            except Exception as exc:
                response = await self._handled(request, exc)
        if type(response) is NoStoreJSON:  # its headers are known: none of the policy's
            response.raw_headers.extend(policy.always)
        else:
            policy.add_headers(response.raw_headers)
        response.raw_headers.append((b"x-request-id", rid.encode()))
        await response(scope, receive, send)
        return response.status_code

    async def _handled(self, request: Request, exc: Exception) -> Response:
        """The answer Starlette's handlers give to ``exc`` (most specific class first)."""
        handlers: Mapping[Any, Any] = self.exception_handlers
        for cls in type(exc).__mro__:
            handler = handlers.get(cls)
            if handler is not None:
                answer: Response = await handler(request, exc)
                return answer
        raise exc  # no handler at all: as Starlette, let the server log it
