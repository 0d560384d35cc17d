"""Errors on pages are pages: a browser that asked for HTML (an unknown page,
a wrong method, a database outage behind a page) gets a sentence in the site's
layout, never problem+json. API and WebSocket paths keep their problem+json
answers, as do clients that do not ask for HTML (curl, fetch)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from onsale.kernel.problems import Problem
from onsale.web.templating import problem_page

Handler = Callable[[Request, Exception], Awaitable[Response]]
API_PREFIXES = ("/api/", "/ws/")


def wants_page(request: Request) -> bool:
    return (not request.url.path.startswith(API_PREFIXES)
            and "text/html" in request.headers.get("accept", ""))


def problem_of(exc: Exception) -> Problem:
    if isinstance(exc, Problem):
        return exc
    if isinstance(exc, HTTPException):
        status = exc.status_code
        return Problem(status, {404: "not_found", 405: "method_not_allowed"}.get(
            status, "invalid_request"))
    return Problem(500, "internal_error")


def as_page(api_handler: Handler) -> Handler:
    async def handler(request: Request, exc: Exception) -> Response:
        if not wants_page(request):
            return await api_handler(request, exc)
        if not isinstance(exc, HTTPException | Problem):
            await api_handler(request, exc)  # it logs the unexpected error
        problem = problem_of(exc)
        response = await problem_page(request, problem.status, problem.code)
        if problem.status == 503:
            response.headers["Retry-After"] = "1"
        return response
    return handler


def page_handlers(handlers: dict[Any, Any]) -> dict[Any, Any]:
    """An app's exception handlers, those that answer with a problem answering pages
    with a page (the composition root builds the app with them)."""
    out = dict(handlers)
    for key in (HTTPException, Problem, Exception):
        found = out.get(key)
        if found is not None:
            out[key] = as_page(found)
    return out
