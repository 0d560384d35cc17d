"""uvicorn's httptools protocol with coalesced writes.

uvicorn writes a response's head and body with two ``transport.write`` calls,
which on a keep-alive connection means two ``send`` system calls, two packets
and two wake-ups of the client for every small JSON answer. Writes made in
the same event-loop turn are gathered here and sent once, at the end of the
turn (a "cork", as nginx and h2o do). Nothing is delayed past the current
turn, and close() sends what is pending first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CorkedTransport:
    """Delegates to the real transport; ``write`` is buffered until the loop turn ends."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def flush(self) -> None:
        if self._pending:
            data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CorkedHttpToolsProtocol(HttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        corked = CorkedTransport(transport, asyncio.get_running_loop())
        super().connection_made(corked)  # type: ignore[arg-type]

    def handle_websocket_upgrade(self) -> None:
        """A WebSocket gets the real transport: it writes whole frames, often one to
        each of thousands of sockets in one loop turn (the seat map's fan-out)."""
        corked = self.transport
        if isinstance(corked, CorkedTransport):
            corked.flush()
            self.transport = corked._transport
        super().handle_websocket_upgrade()
