"""Whether the cookies onsale sets are ``Secure`` and ``__Host-`` prefixed.

One pure decision from the public URL (docs/security.md#secure-defaults-in-serve):
``Secure`` unless the site is served over plain http on a loopback address (a
developer's ``onsale dev``), where a browser would refuse to store a Secure
cookie; when Secure, the name also gets the ``__Host-`` prefix, which makes the
browser refuse the cookie unless it was set by a secure page of exactly this
host with ``Path=/`` and no ``Domain`` (a sibling subdomain cannot plant one).

Every writer and reader of a cookie name goes through the same policy (the
admission and queue-ticket cookies: ``edge.tokens``, ``edge.routes``,
``edge.gate``; ``web.shop_pages``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from http.cookies import _unquote
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from onsale.kernel.origins import is_loopback_host

if TYPE_CHECKING:
    from onsale.kernel.config import Settings

HOST_PREFIX = "__Host-"


@dataclass(frozen=True)
class CookiePolicy:
    secure: bool
    prefix: str  # "__Host-" when secure, else ""

    def name(self, base: str) -> str:
        return f"{self.prefix}{base}"


@functools.lru_cache(maxsize=16)
def cookie_policy(public_url: str, secure: bool | None = None) -> CookiePolicy:
    """The policy for a site served at ``public_url`` (ONSALE_PUBLIC_URL):
    Secure unless it is plain http on loopback; ``secure`` overrides when given.
    Cached: the hot paths (queue polls) ask on every request."""
    parts = urlsplit(public_url)
    plain_loopback = parts.scheme.lower() == "http" and is_loopback_host(parts.hostname)
    on = not plain_loopback if secure is None else secure
    return CookiePolicy(secure=on, prefix=HOST_PREFIX if on else "")


def settings_cookie_policy(settings: Settings) -> CookiePolicy:
    """The policy of a deployment: from its public URL, and always Secure with
    ONSALE_COOKIE_SECURE=true (the flag can only add Secure, never remove it)."""
    return cookie_policy(settings.public_url, True if settings.cookie_secure else None)


# What ``str.strip()`` removes from a latin-1 header (``\x1c``-``\x1f``, ``\x85`` and
# ``\xa0`` too, not only ASCII whitespace): Starlette strips the decoded string.
_SPACE = bytes(c for c in range(256) if chr(c).isspace())


def raw_cookies(header: bytes | None, names: tuple[bytes, bytes]) -> tuple[str | None, str | None]:
    """The values of two cookies (``names``, latin-1 bytes) read straight from a raw
    ``Cookie`` header, as Starlette's ``request.cookies`` reads them (the same
    splitting, stripping and unquoting; the last of a repeated name wins), without
    decoding the header or building the dictionary of every cookie: the queue poll's
    two (docs/design.md#the-fast-lane)."""
    if not header:
        return None, None
    first = second = None
    for chunk in header.split(b";"):
        key, eq, value = chunk.partition(b"=")
        if not eq:
            continue
        key = key.strip(_SPACE)
        if key == names[0]:
            first = _unquote(value.strip(_SPACE).decode("latin-1"))
        elif key == names[1]:
            second = _unquote(value.strip(_SPACE).decode("latin-1"))
    return first, second
