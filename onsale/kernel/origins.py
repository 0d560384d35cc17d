"""Which pages may make state-changing requests, and the page policy (pure).

The verdict is a function of the method, two request headers and the configured
public origins, so it is tested with literal inputs; ``kernel.security`` applies
it to every request (docs/security.md#cross-site-request-forgery).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Sec-Fetch-Site values of a request this site's own pages (or the user) made.
_OWN_FETCH_SITES = frozenset({"same-origin", "none"})
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback_host(host: str | None) -> bool:
    """``localhost`` (and its subdomains), 127.0.0.0/8 or ::1 (the page policy's
    loopback spellings, and ``kernel.cookies``' plain-http exception)."""
    if not host:
        return False
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origin_of(url: str) -> str | None:
    """The serialized origin of an absolute http(s) URL, as a browser sends it
    in ``Origin`` (lowercase scheme and host, default port left out), or None."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname  # lowercased, brackets removed
    if scheme not in ("http", "https") or not host:
        return None
    return _serialize(scheme, host, port)


def _serialize(scheme: str, host: str, port: int | None) -> str:
    if ":" in host:
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def parse_origin(value: str) -> str | None:
    """An origin as configured (``https://shop.example``, ``http://127.0.0.1:8000``):
    scheme, host and port only, else None (a path, query or user name is an error)."""
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return origin_of(value)


def public_origins(public_url: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The origins whose pages may post: the public URL's and ``extra``
    (ONSALE_ALLOWED_ORIGINS). A loopback public URL also admits the other
    spellings of loopback at the same scheme and port (a developer who opens
    ``http://localhost:8000`` instead of ``http://127.0.0.1:8000``)."""
    origins = {o for o in (origin_of(public_url), *(parse_origin(e) for e in extra)) if o}
    if origins and is_loopback_host(urlsplit(public_url).hostname):
        parts = urlsplit(public_url)
        origins.update(_serialize(parts.scheme.lower(), name, parts.port)
                       for name in _LOOPBACK_NAMES)
    return frozenset(origins)


def is_cross_site(method: str, origin: str | None, fetch_site: str | None,
                  allowed: frozenset[str]) -> bool:
    """Whether to refuse a request as forged by another site's page.

    Safe methods never are. An unsafe one is judged by ``Origin`` (every
    browser sends it on POST, PUT, PATCH and DELETE): foreign unless it is one
    of ``allowed``; ``null`` (a sandboxed frame, a ``data:`` page, some
    redirects) is foreign. Without ``Origin``, by ``Sec-Fetch-Site``: only
    ``same-origin`` and ``none`` (typed by the user) pass; ``same-site`` is a
    sibling subdomain, which SameSite cookies do not stop. With neither header
    the request is not from a browser page (an API client, a provider's
    webhook): its credentials decide, as before.
    """
    if method not in UNSAFE_METHODS:
        return False
    if origin is not None:
        return origin.strip().lower() not in allowed
    if fetch_site is not None:
        return fetch_site.strip().lower() not in _OWN_FETCH_SITES
    return False


def websocket_origins(origins: Iterable[str]) -> list[str]:
    """``ws://`` / ``wss://`` twins of http(s) origins (the seat-map socket).
    IPv6 literals are left out: CSP's host grammar has none (``'self'`` covers them)."""
    return sorted({"ws" + o[4:] for o in origins
                   if o.startswith(("http://", "https://")) and "[" not in o})


def page_policy(origins: Iterable[str], provider: str | None = None) -> str:
    """The Content-Security-Policy of every HTML page: scripts, styles and
    images from this site only (no inline script, no inline style attribute,
    no ``eval``); API and seat-map socket on this site, and the payment provider's
    API (``provider``, an origin: the checkout page tokenizes the card there, so the
    card number goes to the provider and never to this site); never framed."""
    extra = [provider] if provider else []
    connect = " ".join(["'self'", *websocket_origins(origins), *extra])
    return ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src {connect}; object-src 'none'; frame-ancestors 'none'; "
            "base-uri 'none'; form-action 'self'")
