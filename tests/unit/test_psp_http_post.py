"""psp.http_post: reading answers from literal bytes (no sockets)."""

from __future__ import annotations

import asyncio

import pytest

from onsale.psp.http_post import Poster, ProtocolError, read_response


async def read(raw: bytes) -> tuple[int, bool, bytes]:
    reader = asyncio.StreamReader()
    reader.feed_data(raw)
    reader.feed_eof()
    status, keep = await read_response(reader, await reader.readline())
    return status, keep, await reader.read()


async def test_sized_body_keeps_the_connection() -> None:
    assert await read(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT") == (
        200, True, b"NEXT")


async def test_chunked_body_with_trailers() -> None:
    raw = b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX: 1\r\n\r\nN"
    assert await read(raw) == (500, True, b"N")


async def test_no_length_reads_to_close() -> None:
    assert await read(b"HTTP/1.1 200 OK\r\n\r\nall of it") == (200, False, b"")


async def test_no_content_and_connection_headers() -> None:
    assert await read(b"HTTP/1.1 204 No Content\r\n\r\n") == (204, True, b"")
    assert await read(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n") == (
        204, False, b"")
    assert await read(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n") == (200, False, b"")
    assert await read(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n"
                      b"\r\n") == (200, True, b"")


@pytest.mark.parametrize("raw", [
    b"", b"SSH-2.0-OpenSSH\r\n", b"HTTP/1.1 abc\r\n\r\n", b"HTTP/1.1 200 OK\r\nX: y",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
])
async def test_not_http(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        await read(raw)


def test_target_and_host() -> None:
    poster = Poster("http://user@core.test:8000/api/hooks?x=1", timeout=5)
    assert (poster.host, poster.port, poster.host_header, poster.target) == (
        "core.test", 8000, "core.test:8000", "/api/hooks?x=1")
    secure = Poster("https://core.test", timeout=5)
    assert (secure.port, secure.target, secure.ssl is not None) == (443, "/", True)
    with pytest.raises(ValueError):
        Poster("core.test/hooks", timeout=5)
