"""The limits every public HTTP listener enforces (docs/security.md#bounded-http).

Plain values and pure verdicts: ``onsale.kernel.http_protocol`` feeds them what it has
parsed and sends what they decide. Read once from ``ONSALE_HTTP_*`` variables by
every role and by the payment simulator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from onsale.kernel.settings import Section, load, setting


@dataclass(frozen=True)
class HttpLimits(Section):
    ENV_PREFIX: ClassVar[str] = "ONSALE_HTTP_"

    max_head_bytes: int = setting(
        16 * 1024, "Request line plus headers; past it `431 headers_too_large`",
        lo=1024, hi=1024 * 1024, unit="bytes")
    max_headers: int = setting(
        100, "Header lines in one request; past it `431 headers_too_large`", lo=8, hi=1000)
    max_pipelined: int = setting(
        4, "Requests parsed ahead of the one in progress on a connection; past it the "
        "socket is not read (backpressure)", lo=1, hi=64)
    max_body_bytes: int = setting(
        1024 * 1024, "Request body, by `Content-Length` or as streamed; past it "
        "`413 payload_too_large`", lo=1024, hi=1024 * 1024 * 1024, unit="bytes")
    max_connections: int = setting(
        10_000, "Open HTTP connections per process (WebSockets not counted); past it a new "
        "connection gets `503 overloaded` and is closed", lo=1, hi=1_000_000)
    max_requests: int = setting(
        1_000, "HTTP requests in progress per process; past it `503 overloaded` with "
        "`Retry-After: 1`", lo=1, hi=1_000_000)
    header_timeout: float = setting(
        10.0, "Time to send a whole request head, and then its whole body; past it "
        "`408 request_timeout` (a body: the request is dropped) and the connection is "
        "closed", lo=0.1, hi=3600.0, unit="s")
    keepalive_timeout: float = setting(
        5.0, "An idle keep-alive connection is closed after this", lo=0.1, hi=3600.0,
        unit="s")
    write_timeout: float = setting(
        15.0, "A connection holding answer bytes its client has not taken (in user space or "
        "the socket's send queue) must let the client take at least 16 KiB, or all of it, "
        "within this; else it is aborted with a reset and its buffers are freed",
        lo=0.1, hi=3600.0, unit="s")
    max_unsent_bytes: int = setting(
        128 * 1024 * 1024, "Answer bytes a listener holds for clients that have not read "
        "them (128 MiB); past it a new answer over 16 KiB gets `503 overloaded` with "
        "`Retry-After: 1`, smaller ones are still served", lo=1024 * 1024, hi=1 << 40,
        unit="bytes")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HttpLimits:
        return load(cls, env)


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
