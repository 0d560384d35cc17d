"""A small keep-alive HTTP/1.1 client that only POSTs to one URL (webhook delivery).

httpx's pool scans every connection on every request, which caps delivery at a
few hundred events a second with a hundred in flight; this keeps a plain stack
of idle connections instead. Responses with a length, chunked or read-to-close
bodies are understood; the body is read and discarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from urllib.parse import urlsplit

MAX_LINE = 16 * 1024
MAX_BODY = 1024 * 1024

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class ProtocolError(Exception):
    """The endpoint's answer is not HTTP/1.x."""


class StaleConnection(ProtocolError):
    """A reused connection was closed before any answer (safe to retry once)."""


class Poster:
    def __init__(self, url: str, timeout: float, max_idle: int = 128) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an absolute http(s) URL: {url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl = ssl.create_default_context() if parts.scheme == "https" else None
        self.host_header = parts.netloc.rpartition("@")[2]
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.timeout = timeout
        self.max_idle = max_idle
        self._idle: list[Connection] = []

    async def post(self, body: bytes, headers: dict[str, str]) -> int:
        """The response status; raises OSError, TimeoutError or ProtocolError."""
        async with asyncio.timeout(self.timeout):
            while self._idle:
                try:
                    return await self._exchange(self._idle.pop(), body, headers, reused=True)
                except StaleConnection:
                    continue
            connection = await asyncio.open_connection(self.host, self.port, ssl=self.ssl,
                                                       limit=MAX_LINE)
            return await self._exchange(connection, body, headers, reused=False)

    async def aclose(self) -> None:
        while self._idle:
            _close(self._idle.pop())

    async def _exchange(self, connection: Connection, body: bytes, headers: dict[str, str],
                        *, reused: bool) -> int:
        reader, writer = connection
        head = [f"POST {self.target} HTTP/1.1", f"Host: {self.host_header}",
                f"Content-Length: {len(body)}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        try:
            try:
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
                await writer.drain()
                status_line = await reader.readline()
            except ConnectionError:
                if reused:
                    raise StaleConnection("reset before answering") from None
                raise
            if not status_line and reused:
                raise StaleConnection("closed before answering")
            status, keep_alive = await read_response(reader, status_line)
        except BaseException:
            _close(connection)
            raise
        if keep_alive and len(self._idle) < self.max_idle:
            self._idle.append(connection)
        else:
            _close(connection)
        return status


async def read_response(reader: asyncio.StreamReader, status_line: bytes) -> tuple[int, bool]:
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ProtocolError(f"bad status line {status_line[:80]!r}")
    status = int(parts[1])
    keep_alive = parts[0] == b"HTTP/1.1"
    length: int | None = None
    chunked = False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise ProtocolError("connection closed in the headers")
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == b"content-length" and value.isdigit():
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value
        elif name == b"connection":
            keep_alive = (keep_alive and value != b"close") or value == b"keep-alive"
    if status in (204, 304) or 100 <= status < 200:
        return status, keep_alive
    if chunked:
        await _skip_chunks(reader)
    elif length is not None:
        if length > MAX_BODY:
            raise ProtocolError("response body too large")
        await reader.readexactly(length)
    else:
        await reader.read(MAX_BODY)  # until the server closes
        keep_alive = False
    return status, keep_alive


async def _skip_chunks(reader: asyncio.StreamReader) -> None:
    total = 0
    while True:
        size_line = await reader.readline()
        try:
            size = int(size_line.split(b";")[0].strip(), 16)
        except ValueError:
            raise ProtocolError(f"bad chunk size {size_line[:40]!r}") from None
        total += size
        if total > MAX_BODY:
            raise ProtocolError("response body too large")
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return
        await reader.readexactly(size + 2)


def _close(connection: Connection) -> None:
    with contextlib.suppress(Exception):
        connection[1].close()
