"""The origin check and the response headers, as one pure ASGI middleware.

Put in front of every app that serves the core, edge or seat-map routes (the
composition root builds them with it). Per request it does two things
(docs/security.md):

- refuses an unsafe request (POST, PUT, PATCH, DELETE) that a page on another
  origin made: ``403 cross_site_request`` before any route runs (the verdict is
  ``kernel.origins.is_cross_site``);
- adds headers to every response: ``X-Content-Type-Options: nosniff`` and
  ``Referrer-Policy``, ``Strict-Transport-Security`` when the public URL is
  https, and on HTML (and SVG) the Content-Security-Policy and
  ``X-Frame-Options: DENY``. A header the route set itself is left alone.

Not ``BaseHTTPMiddleware``: this sits on the hold path, and a raw ASGI wrapper
costs one header scan and one ``send`` closure per request.
"""

from __future__ import annotations

from typing import Any

from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from onsale.kernel.config import Settings
from onsale.kernel.origins import (
    UNSAFE_METHODS,
    is_cross_site,
    page_policy,
    parse_origin,
    public_origins,
)
from onsale.kernel.problems import Problem, ProblemResponse

HSTS = "max-age=63072000; includeSubDomains"
REFERRER_POLICY = "strict-origin-when-cross-origin"
_PAGE_TYPES = (b"text/html", b"image/svg+xml")


def response_headers(*, hsts: bool) -> list[tuple[bytes, bytes]]:
    """The headers of every response."""
    headers = [(b"x-content-type-options", b"nosniff"),
               (b"referrer-policy", REFERRER_POLICY.encode())]
    if hsts:
        headers.append((b"strict-transport-security", HSTS.encode()))
    return headers


def page_headers(csp: str) -> list[tuple[bytes, bytes]]:
    """The extra headers of an HTML page."""
    return [(b"content-security-policy", csp.encode()), (b"x-frame-options", b"DENY")]


class SecurityPolicy:
    """The origin check and the headers, for the middleware and for the fast lane
    (``kernel.fast_lane``), which answers its hot routes ahead of the middleware."""

    def __init__(self, *, allowed_origins: frozenset[str], hsts: bool, csp: str) -> None:
        self.allowed = allowed_origins
        self.always = response_headers(hsts=hsts)
        self.page = page_headers(csp)
        self.every_page = (*self.always, *self.page)

    def refusal(self, scope: Scope) -> Response | None:
        """403 ``cross_site_request`` for an unsafe request another site's page made."""
        if scope["method"] in UNSAFE_METHODS and self._foreign(scope):
            return ProblemResponse(Problem(
                403, "cross_site_request",
                detail="Unsafe requests are accepted only from this site's own pages."))
        return None

    def _foreign(self, scope: Scope) -> bool:
        origin = fetch_site = None
        for name, value in scope["headers"]:
            if name == b"origin":
                origin = value.decode("latin-1")
            elif name == b"sec-fetch-site":
                fetch_site = value.decode("latin-1")
        return is_cross_site(scope["method"], origin, fetch_site, self.allowed)

    def add_headers(self, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """``headers`` (a response's raw headers) with the missing security headers added."""
        present = set()
        page = False
        for name, value in headers:  # one pass (every fast-lane answer comes here)
            name = name.lower()
            present.add(name)
            if name == b"content-type" and value.lower().startswith(_PAGE_TYPES):
                page = True
        for name, value in self.every_page if page else self.always:
            if name not in present:
                headers.append((name, value))
        return headers


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, *, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = self.policy.add_headers(list(message.get("headers", ())))
            await send(message)

        refusal = self.policy.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


def security_options(settings: Settings) -> dict[str, Any]:
    """The middleware's arguments from settings (ONSALE_PUBLIC_URL, ONSALE_ALLOWED_ORIGINS)."""
    origins = public_origins(settings.public_url, settings.allowed_origins)
    provider = parse_origin(settings.stripe_api_base) if settings.payments_configured else None
    return {"allowed_origins": origins, "hsts": settings.public_url.startswith("https://"),
            "csp": page_policy(origins, provider)}


def security_policy(settings: Settings) -> SecurityPolicy:
    return SecurityPolicy(**security_options(settings))


def security_middleware(settings: Settings, policy: SecurityPolicy | None = None) -> Middleware:
    """The middleware in front of an app's routes (pass it to ``Starlette``)."""
    return Middleware(SecurityMiddleware, policy=policy or security_policy(settings))
