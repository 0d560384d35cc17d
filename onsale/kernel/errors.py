"""The exception handlers of every app, and the plain health answer.

An outage (and a client that went away) is answered with its documented problem and no
traceback; only a real bug is logged and answered 500."""

from __future__ import annotations

import logging
from typing import Any

import redis.exceptions
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from onsale.kernel.db import UNAVAILABLE, outage_detail
from onsale.kernel.dependency import DependencyUnavailable, is_outage
from onsale.kernel.problems import Problem, ProblemResponse, http_exception_handler, problem_handler

log = logging.getLogger("onsale.errors")


async def internal_error(request: Request, exc: Exception) -> Response:
    outage = outage_problem(request, exc)
    if outage is not None:  # a dependency is down: its breaker logged it once already
        return await problem_handler(request, outage)
    if isinstance(exc, ClientDisconnect):  # nobody to answer (gone, or cut off at 413)
        return Response(status_code=400)
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return ProblemResponse(Problem(500, "internal_error"))


def error_handlers() -> dict[Any, Any]:
    """Every app's exception handlers. An outage (and a client that went away) is
    answered by Starlette's inner exception middleware, which does not re-raise: no
    traceback per request. Only a real bug reaches the outermost handler, which logs it
    and answers 500 (then Starlette re-raises it, and uvicorn logs it too)."""
    quiet = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
             DependencyUnavailable, ClientDisconnect, *UNAVAILABLE)
    handlers: dict[Any, Any] = {Problem: problem_handler,
                                HTTPException: http_exception_handler}
    handlers.update(dict.fromkeys(quiet, internal_error))
    handlers[Exception] = internal_error
    return handlers


def outage_problem(request: Request, exc: Exception) -> Problem | None:
    """The documented 503 for a dependency failure that no route caught: never a
    500 with a traceback per request (docs/security.md#dependencies-fail-fast)."""
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        code = "queue_unavailable" if "/queue" in request.url.path else "admission_unavailable"
        return Problem(503, code, detail="The waiting room store did not answer; retry shortly.")
    if isinstance(exc, UNAVAILABLE) or is_outage(exc):
        return Problem(503, "inventory_unavailable", detail=outage_detail(exc))
    return None


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})
