"""The HTTP limits' settings and verdicts, and the cap on requests in progress."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from onsale.kernel.config import ConfigError
from onsale.kernel.http_limits import (
    HttpLimits,
    head_refusal,
    partial_head_too_large,
    refusal_bytes,
)
from onsale.kernel.http_server import RequestLimit

LIMITS = HttpLimits(max_head_bytes=16384, max_headers=100, max_body_bytes=65536)


def test_defaults_and_overrides_from_the_environment() -> None:
    assert HttpLimits.from_env({}) == HttpLimits()
    assert HttpLimits().max_head_bytes == 16 * 1024 and HttpLimits().header_timeout == 10.0
    got = HttpLimits.from_env({"ONSALE_HTTP_MAX_PIPELINED": "2",
                               "ONSALE_HTTP_HEADER_TIMEOUT": "2.5",
                               "ONSALE_HTTP_MAX_CONNECTIONS": ""})
    assert got.max_pipelined == 2 and got.header_timeout == 2.5
    assert got.max_connections == HttpLimits().max_connections


@pytest.mark.parametrize("env, message", [
    ({"ONSALE_HTTP_MAX_HEAD_BYTES": "big"}, "must be an integer"),
    ({"ONSALE_HTTP_MAX_HEAD_BYTES": "10"}, "between 1024 and"),
    ({"ONSALE_HTTP_MAX_PIPELINED": "0"}, "between 1 and 64"),
    ({"ONSALE_HTTP_HEADER_TIMEOUT": "nan"}, "seconds"),
    ({"ONSALE_HTTP_KEEPALIVE_TIMEOUT": "-1"}, "seconds"),
])
def test_bad_settings_are_refused_with_their_name(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        HttpLimits.from_env(env)
    assert next(iter(env)) in str(info.value)


def test_head_verdicts() -> None:
    ok = dict(head_bytes=500, header_count=10, content_length=None)
    assert head_refusal(LIMITS, **ok) is None  # type: ignore[arg-type]
    assert head_refusal(LIMITS, head_bytes=16385, header_count=1, content_length=None) == 431
    assert head_refusal(LIMITS, head_bytes=16384, header_count=100, content_length=None) is None
    assert head_refusal(LIMITS, head_bytes=100, header_count=101, content_length=None) == 431
    assert head_refusal(LIMITS, head_bytes=100, header_count=3, content_length=b"65536") is None
    assert head_refusal(LIMITS, head_bytes=100, header_count=3, content_length=b"65537") == 413
    assert head_refusal(LIMITS, head_bytes=100, header_count=3,
                        content_length=b"9" * 40) == 413  # no giant int parsed
    assert head_refusal(LIMITS, head_bytes=100, header_count=3, content_length=b"\xd9\xa3") == 400
    assert head_refusal(LIMITS, head_bytes=100, header_count=3, content_length=b"-1") == 400


def test_an_unfinished_head_is_refused_only_when_certainly_over() -> None:
    # counted overstates by at most one slice
    assert not partial_head_too_large(LIMITS, 16384 + 1024, 1024)
    assert partial_head_too_large(LIMITS, 16384 + 1025, 1024)


def test_refusals_are_problem_documents_that_close_the_connection() -> None:
    raw = refusal_bytes(503, "Service Unavailable")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert b"retry-after: 1" in head and b"connection: close" in head
    assert b"content-length: %d" % len(body) in head
    assert json.loads(body)["code"] == "overloaded"
    assert b"retry-after" not in refusal_bytes(431, "x")


async def test_requests_past_the_cap_get_503_at_once_and_websockets_are_not_counted() -> None:
    release = asyncio.Event()
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])
        if scope["type"] == "http":
            await release.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    limited = RequestLimit(app, 2)

    async def call(kind: str = "http") -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
        await limited({"type": kind}, None, send)
        return sent

    first = [asyncio.ensure_future(call()) for _ in range(2)]
    await asyncio.sleep(0)
    refused = await call()
    assert refused[0]["status"] == 503
    assert (b"retry-after", b"1") in refused[0]["headers"]
    assert json.loads(refused[1]["body"])["code"] == "overloaded"
    await call("websocket")  # passes through while the cap is reached
    release.set()
    assert [(await f)[0]["status"] for f in first] == [200, 200]
    assert limited.in_progress == 0
    assert (await call())[0]["status"] == 200
    assert seen.count("websocket") == 1
