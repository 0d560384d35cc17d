"""WebSocket clients of the hub: a frame serialized once, offered to every client.

``offer`` never waits and says False when the client is too far behind (the
hub then cuts it off with ``cut_off``: one ``reload`` message and a close).

- ``DirectClient`` (uvicorn's sans-I/O WebSocket protocol, what ``onsale
  serve`` runs): the frame is WebSocket-framed once for everyone and written
  straight to each socket's transport; the transport's write buffer is the
  bounded queue (``ONSALE_SEATMAP_CLIENT_BUFFER_KB``). No task wakes per
  client per frame. uvicorn still owns the handshake, pings and the close.
- ``QueuedClient`` (any other ASGI server): a bounded queue of ASGI messages
  (``ONSALE_SEATMAP_CLIENT_QUEUE``) drained by the connection's own task.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Protocol

from starlette.websockets import WebSocket

from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.sequencer import control_frame

CLOSE_RELOAD = 4000  # close code after a reload message
ABORT_AFTER_SECONDS = 10.0  # a cut-off client that does not even read its close


def ws_frame(opcode: int, payload: bytes) -> bytes:
    """One unmasked, unfragmented server frame (RFC 6455 §5.2)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x80 | opcode, n))
    elif n < 65536:
        head = bytes((0x80 | opcode, 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 127)) + n.to_bytes(8, "big")
    return head + payload


class Outgoing:
    """One message for many clients: its ASGI form and its wire form, each made once."""

    __slots__ = ("_message", "_raw", "binary", "payload")

    def __init__(self, payload: bytes, *, binary: bool = False) -> None:
        self.payload, self.binary = payload, binary
        self._message: dict[str, Any] | None = None
        self._raw: bytes | None = None

    @property
    def message(self) -> dict[str, Any]:
        if self._message is None:
            self._message = ({"type": "websocket.send", "bytes": self.payload} if self.binary
                             else {"type": "websocket.send", "text": self.payload.decode()})
        return self._message

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = ws_frame(2 if self.binary else 1, self.payload)
        return self._raw


class Client(Protocol):
    def offer(self, out: Outgoing) -> bool: ...

    def cut_off(self, reason: str) -> None: ...

    def end(self, code: int, reason: str) -> None: ...

    def disconnected(self) -> None: ...

    async def run(self) -> None: ...


def reload_message(reason: str) -> Outgoing:
    return Outgoing(control_frame("reload", reason=reason))


def close_payload(code: int, reason: str = "") -> bytes:
    """A close frame's payload: the code, then at most 123 bytes of reason."""
    return code.to_bytes(2, "big") + reason.encode()[:123]


class DirectClient:
    def __init__(self, transport: Any, limit_bytes: int) -> None:
        self.transport = transport
        self.limit = limit_bytes
        self.done = asyncio.Event()
        self.cut = False

    def offer(self, out: Outgoing) -> bool:
        t = self.transport
        if self.cut or t.is_closing():
            return True  # going away; the connection's task forgets it
        if t.get_write_buffer_size() > self.limit:
            return False
        t.write(out.raw)
        return True

    def cut_off(self, reason: str) -> None:
        self._close(reload_message(reason).raw, CLOSE_RELOAD, "")

    def end(self, code: int, reason: str) -> None:
        """Close with ``code`` (no message first)."""
        self._close(b"", code, reason)

    def _close(self, last: bytes, code: int, reason: str) -> None:
        if self.cut:
            return
        self.cut = True
        t = self.transport
        if not t.is_closing():
            t.write(last + ws_frame(8, close_payload(code, reason)))
            t.close()  # after what is buffered; abort if it never drains
            asyncio.get_running_loop().call_later(ABORT_AFTER_SECONDS, t.abort)
        self.done.set()

    def disconnected(self) -> None:
        self.done.set()

    async def run(self) -> None:
        await self.done.wait()


class QueuedClient:
    def __init__(self, websocket: WebSocket, limit: int) -> None:
        self.send = websocket.send
        self.limit = limit
        self.queue: deque[dict[str, Any]] = deque()
        self.wake = asyncio.Event()
        self.cut = False
        self.gone = False
        self.closing: tuple[int, str] = (CLOSE_RELOAD, "")

    def offer(self, out: Outgoing) -> bool:
        if self.cut:
            return True
        if len(self.queue) >= self.limit:
            return False
        self.queue.append(out.message)
        self.wake.set()
        return True

    def cut_off(self, reason: str) -> None:
        """Drop what is queued: the next (and last) message is a reload, then a close."""
        self.queue.clear()
        self.queue.append(reload_message(reason).message)
        self.cut = True
        self.wake.set()

    def end(self, code: int, reason: str) -> None:
        """Drop what is queued and close with ``code``."""
        if self.cut:
            return
        self.queue.clear()
        self.closing = (code, reason)
        self.cut = True
        self.wake.set()

    def disconnected(self) -> None:
        self.gone = True
        self.queue.clear()
        self.wake.set()

    async def run(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.queue:
                await self.send(self.queue.popleft())
            if self.gone:
                return
            if self.cut:
                code, reason = self.closing
                await self.send({"type": "websocket.close", "code": code, "reason": reason})
                return


def make_client(websocket: WebSocket, settings: SeatmapSettings) -> Client:
    """Direct when the server is uvicorn's sans-I/O protocol (found through the ASGI
    ``receive`` callable, which no middleware wraps), queued otherwise."""
    protocol = getattr(getattr(websocket, "_receive", None), "__self__", None)
    transport = getattr(protocol, "transport", None)
    if (type(protocol).__name__ == "WebSocketsSansIOProtocol"
            and hasattr(transport, "get_write_buffer_size") and settings.direct_writes):
        return DirectClient(transport, settings.client_buffer_kb * 1024)
    return QueuedClient(websocket, settings.client_queue)
