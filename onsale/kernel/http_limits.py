"""The limits every public HTTP listener enforces (docs/security.md#bounded-http).

Plain values and pure verdicts: ``onsale.kernel.http_protocol`` feeds them what it has
parsed and sends what they decide. Read once from ``ONSALE_HTTP_*`` variables by
every role and by the payment simulator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


class HttpLimitsError(ValueError):
    """An ``ONSALE_HTTP_*`` value is malformed or out of range."""


# The range of each limit; its variable is ONSALE_HTTP_<FIELD>, its default the field's.
_BOUNDS: dict[str, tuple[int, int] | tuple[float, float]] = {
    "max_head_bytes": (1024, 1024 * 1024),
    "max_headers": (8, 1000),
    "max_pipelined": (1, 64),
    "max_body_bytes": (1024, 1024 * 1024 * 1024),
    "max_connections": (1, 1_000_000),
    "max_requests": (1, 1_000_000),
    "header_timeout": (0.1, 3600.0),
    "keepalive_timeout": (0.1, 3600.0),
    "write_timeout": (0.1, 3600.0),
    "max_unsent_bytes": (1024 * 1024, 1 << 40),
}


@dataclass(frozen=True)
class HttpLimits:
    max_head_bytes: int = 16 * 1024   # request line plus headers; past it, 431
    max_headers: int = 100            # header lines in one request; past it, 431
    max_pipelined: int = 4            # requests parsed ahead on one connection
    max_body_bytes: int = 1024 * 1024  # by Content-Length or as streamed; past it, 413
    max_connections: int = 10_000     # open HTTP connections per process; past it, 503
    max_requests: int = 1_000         # requests in progress per process; past it, 503
    header_timeout: float = 10.0      # seconds to send a whole request head
    keepalive_timeout: float = 5.0    # seconds an idle keep-alive connection stays open
    write_timeout: float = 15.0       # seconds a peer may leave answers unread; then abort
    max_unsent_bytes: int = 128 * 1024 * 1024  # unread answers held per process; past
                                               # it, new large answers are 503

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HttpLimits:
        values: dict[str, Any] = {}
        for field in fields(cls):
            name = f"ONSALE_HTTP_{field.name.upper()}"
            raw = env.get(name) or ""
            if not raw:
                continue
            lo, hi = _BOUNDS[field.name]
            seconds = isinstance(lo, float)
            try:
                value = float(raw) if seconds else int(raw)
            except ValueError:
                kind = "a number of seconds" if seconds else "an integer"
                raise HttpLimitsError(f"{name} must be {kind}, got {raw!r}") from None
            if not lo <= value <= hi:  # NaN fails this too
                unit = " seconds" if seconds else ""
                raise HttpLimitsError(f"{name} must be between {lo} and {hi}{unit}, "
                                      f"got {raw}")
            values[field.name] = value
        return cls(**values)


def head_refusal(limits: HttpLimits, *, head_bytes: int, header_count: int,
                 content_length: bytes | None) -> int | None:
    """The status that refuses a complete request head (431, 413, 400), or None.

    ``head_bytes``: the request target plus every header name and value, with
    four bytes of separators per header. ``content_length``: the raw header value.
    """
    if head_bytes > limits.max_head_bytes or header_count > limits.max_headers:
        return 431
    if content_length is not None:
        text = content_length.strip()
        if not text.isdigit() or not text.isascii():
            return 400  # the parser refuses most of these first
        if len(text) > 19 or int(text) > limits.max_body_bytes:
            return 413
    return None


def partial_head_too_large(limits: HttpLimits, counted: int, slice_size: int) -> bool:
    """Whether an unfinished head is certainly over the limit. ``counted`` overstates
    the head by at most one ``slice_size`` (the slice it started in)."""
    return counted - slice_size > limits.max_head_bytes


def write_deadline(unsent: int, deadline: float, now: float, timeout: float, *,
                   progressed: bool = False) -> float:
    """A connection's write deadline after a look at its ``unsent`` bytes: none when
    nothing is left to send; ``timeout`` from now when the peer has ``progressed``
    (taken enough since the deadline started) or none was running; else the same."""
    if unsent == 0:
        return 0.0
    if progressed:
        return now + timeout
    return deadline or now + timeout


def write_overdue(deadline: float, now: float) -> bool:
    """Whether a connection holding unsent bytes is past its write deadline."""
    return 0.0 < deadline <= now


def large_answer(headers: list[tuple[bytes, bytes]], threshold: int) -> bool:
    """Whether a response head announces a body above ``threshold`` bytes (a body of
    unknown length counts as large)."""
    for name, value in headers:
        if name.lower() == b"content-length":
            return not value.isdigit() or int(value) > threshold
    return True


# Problem codes of the refusals (docs/api.md, docs/security.md).
REFUSALS: dict[int, tuple[str, str, str]] = {
    400: ("invalid_request", "The request is malformed",
          "The HTTP request could not be parsed."),
    408: ("request_timeout", "The request head took too long",
          "The request line and headers must arrive within the header timeout."),
    413: ("payload_too_large", "The request body is too large",
          "The request body is larger than this server accepts."),
    431: ("headers_too_large", "The request headers are too large",
          "The request line and headers are too long or too many."),
    503: ("overloaded", "The server is at capacity; retry after the Retry-After delay",
          "Too many connections or requests in progress on this server, or too many "
          "answers not yet read by their clients."),
}


def refusal_body(status: int) -> bytes:
    code, title, detail = REFUSALS[status]
    return json.dumps({"type": f"https://onsale.dev/problems/{code.replace('_', '-')}",
                       "title": title, "status": status, "code": code, "detail": detail},
                      separators=(",", ":")).encode()


def refusal_bytes(status: int, reason: str) -> bytes:
    """A whole HTTP/1.1 response that refuses and closes the connection."""
    body = refusal_body(status)
    retry = b"retry-after: 1\r\n" if status == 503 else b""
    return (b"HTTP/1.1 %d %s\r\ncontent-type: application/problem+json\r\n"
            b"content-length: %d\r\n%sconnection: close\r\n\r\n%s"
            % (status, reason.encode(), len(body), retry, body))
