"""The write side of every HTTP connection: corked small answers, streamed large ones,
and a bound on what a peer that does not read can make the process hold.

**Corked writes.** uvicorn writes a response's head and body with two
``transport.write`` calls, which on a keep-alive connection means two ``send``
system calls, two packets and two wake-ups of the client for every small JSON
answer. Writes made in the same event-loop turn are gathered here and sent once,
at the end of the turn (a "cork", as nginx and h2o do). Nothing is delayed past
the current turn, and close() sends what is pending first.

**Streamed large bodies.** A write of more than ``CHUNK`` bytes is not handed to
the transport in one piece (which would copy all of it into the transport's buffer
for as long as the peer takes to read it). It is kept as a view of the body the
application made — usually one bytes object shared by every response of a cached
page — and fed to the transport a chunk at a time, only while the transport is not
paused (``pause_writing``/``resume_writing``, at a high-water mark of ``HIGH_WATER``).
So a connection's own buffer holds at most ``HIGH_WATER + CHUNK`` bytes. While a
body is streaming, uvicorn's flow control is paused: the next response on the
connection waits for it.

**The write deadline.** A large body, or any bytes left in the transport's buffer,
arm a deadline of ``write_timeout``; until it is lifted, ``close()`` (uvicorn's
keep-alive timeout, a ``Connection: close`` answer) waits for the peer to take
everything, so a closed connection never leaves an orphan socket full of unread
bytes in the kernel. The server's sweep looks at what is still
unsent — the stream, the transport's buffer and the socket's send queue in the
kernel (``TIOCOUTQ``), which on a fast link takes a whole answer of a megabyte or
more from a peer that never reads — and lifts the deadline when all of it is gone,
or starts it again when the peer has taken at least ``CHUNK`` bytes since the last
start. A connection past its deadline is aborted: ``SO_LINGER`` 0 and
``transport.abort()``, so the kernel drops its send queue with a reset and user
space drops its buffer at once (a graceful close keeps both until the peer reads).

**The ledger.** Every connection's unsent bytes are summed per server, as last
seen (buffers only shrink between looks, and a streamed byte counts from the moment
it is handed over until a look at the send queue, so the sum errs high, and a burst
of large answers is counted at once, not half a second later). Past
``max_unsent_bytes``, ``onsale.kernel.http_server.RequestLimit`` refuses new large
answers with ``503 overloaded``; small ones are still served.
"""

from __future__ import annotations

import asyncio
import fcntl
import socket
import struct
import termios
from collections import deque
from collections.abc import Callable
from typing import Any

from onsale.kernel.http_limits import write_deadline

LEDGERS: list[UnsentLedger] = []  # this process's servers' (``/metrics`` sums them)
CHUNK = 16 * 1024        # a write above this is streamed; the piece fed at a time
HIGH_WATER = 32 * 1024   # the transport's high-water mark (low water: a quarter)


class UnsentLedger:
    """The bytes a server holds for peers that have not read them yet."""

    def __init__(self, cap: int, *, counted: bool = True) -> None:
        """``counted``: in the process's ``/metrics`` (not the ops listener's own ledger,
        whose scrapes would count themselves)."""
        self.cap = cap
        self.total = 0
        self.aborted = 0     # connections aborted past their write deadline
        self.refused = 0     # large answers refused at the cap
        if counted:
            LEDGERS.append(self)

    def over(self) -> bool:
        return self.total >= self.cap


class CorkedTransport:
    """Delegates to the real transport; see the module docstring for what it adds."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop,
                 ledger: UnsentLedger | None = None, write_timeout: float = 0.0) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._stream: deque[memoryview] = deque()  # bytes waiting for the peer, in order
        self._streamed = 0                         # bytes in _stream
        self._ledger = ledger or UnsentLedger(1 << 62)
        self._counted = 0                          # this connection's share of the ledger
        self._timeout = write_timeout
        self.deadline = 0.0                        # loop time; 0: nothing unsent
        self._paused = False                       # the transport asked us to stop
        self._closing = False                      # close once the stream is sent
        self._gone = False                         # the connection is lost: write nothing
        self.on_busy: Callable[[bool], None] = _ignore  # the protocol's flow control
        self._busy = False
        self._written = 0                          # bytes handed to this writer, ever
        self._mark = 0                             # bytes sent when the deadline started
        self._kernel = 0                           # the send queue, as last seen
        self._pumped = 0                           # streamed to the transport since then
        self._sock: Any = None
        self.send_queue: Callable[[Any], int] = send_queue  # (tests give their own)
        if write_timeout:
            try:
                transport.set_write_buffer_limits(high=HIGH_WATER)
            except (AttributeError, NotImplementedError):  # a test double
                pass
            self._sock = transport.get_extra_info("socket")

    # Writing --------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or self._gone:
            return
        if len(data) > CHUNK or self._stream:
            self._pending_to_stream()
            self._stream.append(memoryview(data if isinstance(data, bytes) else bytes(data)))
            self._streamed += len(data)
            self._written += len(data)
            if self._timeout and not self.deadline:  # the kernel may take it all at once
                self._start_deadline()
            self._pump()
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def _pending_to_stream(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._stream.append(memoryview(data))
            self._streamed += len(data)
            self._written += len(data)

    def flush(self) -> None:
        if self._gone:
            return
        if self._stream:
            self._pending_to_stream()
            self._pump()
            return
        if self._pending:
            data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._written += len(data)
                self._transport.write(data)
                if self._timeout:
                    self.observe()

    def _pump(self) -> None:
        """Feed the stream to the transport while it takes more."""
        transport = self._transport
        stream = self._stream
        while stream and not self._paused and not transport.is_closing():
            piece = stream[0]
            if len(piece) > CHUNK:
                stream[0] = piece[CHUNK:]
                piece = piece[:CHUNK]
            else:
                stream.popleft()
            self._streamed -= len(piece)
            self._pumped += len(piece)  # unsent until the sweep sees the send queue
            transport.write(piece)  # may call pause_writing() before it returns
        self.observe()
        self._set_busy(bool(stream) or self._paused)
        if not stream and self._closing:
            if self.deadline:
                self._half_close()
            else:
                transport.close()

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def close(self) -> None:
        self.flush()
        if self._stream:
            self._closing = True  # half-closed by _pump once the stream is handed over
        elif self._timeout and self.deadline:
            self._closing = True
            self._half_close()
        else:
            self._transport.close()

    def _half_close(self) -> None:
        """Closed once the peer has it all, the socket's send queue included (a close
        now would leave the kernel an orphan socket full of it, out of our sight), or
        aborted at the deadline. Meanwhile the write side is shut: the peer gets its
        end of file right after the last byte, as with a close."""
        try:
            if self._transport.can_write_eof():
                self._transport.write_eof()
        except (AttributeError, NotImplementedError, OSError):
            pass

    # Flow control (called by the protocol's pause_writing/resume_writing) ---------

    def transport_paused(self) -> None:
        self._paused = True
        self._set_busy(True)

    def transport_resumed(self) -> None:
        self._paused = False
        self._start_deadline()  # the peer drained the buffer: the deadline starts again
        self._pump()

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.on_busy(busy)

    # Accounting and the deadline ----------------------------------------------------

    def unsent(self) -> int:
        """Bytes not yet taken by the peer, as last seen: the send queue at the last
        ``observe(kernel=True)``, and every streamed byte handed over since (the kernel
        may have taken it all at once; it counts until the next look)."""
        return (self._streamed + self._transport.get_write_buffer_size() + self._kernel
                + self._pumped)

    def _start_deadline(self) -> None:
        if self._timeout:
            self.deadline = self._loop.time() + self._timeout
            self._mark = self._written - self.unsent()

    def holding(self) -> int:
        """Bytes this connection holds in user space: not yet handed to the kernel."""
        return (self._streamed + sum(len(p) for p in self._pending)
                + self._transport.get_write_buffer_size())

    def observe(self, *, kernel: bool = False) -> None:
        """Record this connection's unsent bytes in the ledger; arm the deadline when
        bytes wait in user space. With ``kernel`` (the sweep), read the socket's send
        queue too, and lift or restart the deadline by what the peer has taken."""
        if self._gone:
            return
        if kernel:
            self._kernel = self.send_queue(self._sock)
            self._pumped = 0
        unsent = self.unsent()
        ledger = self._ledger
        ledger.total += unsent - self._counted
        self._counted = unsent
        if not self._timeout:
            return
        if kernel:
            taken = self._written - unsent
            progressed = taken - self._mark >= CHUNK
            if progressed:
                self._mark = taken
            self.deadline = write_deadline(unsent, self.deadline, self._loop.time(),
                                           self._timeout, progressed=progressed)
            if self._closing and not unsent and not self._transport.is_closing():
                self._transport.close()  # the peer has taken it all: close for real
        elif unsent and not self.deadline:
            self._start_deadline()

    def abort(self) -> None:
        """Drop everything unsent and the connection with it: a reset, so the kernel
        frees the send queue too."""
        self._pending.clear()
        self._stream.clear()
        self._streamed = 0
        self._ledger.aborted += 1
        if self._sock is not None:
            try:
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                      struct.pack("ii", 1, 0))
            except OSError:
                pass
        self._transport.abort()
        self.forget()

    def forget(self) -> None:
        """The connection is gone (or handed to a WebSocket): its bytes leave the
        ledger, and whatever is written from now on is dropped, never counted (a
        request still running when the connection was lost may yet write its answer)."""
        self._gone = True
        self._ledger.total -= self._counted
        self._counted = 0
        self._kernel = self._pumped = 0
        self.deadline = 0.0
        self._pending.clear()
        self._stream.clear()
        self._streamed = 0
        self._set_busy(False)

    def raw(self) -> asyncio.Transport:
        """The real transport, for a WebSocket (which writes whole frames itself);
        this writer is done."""
        self.flush()
        self.forget()
        return self._transport

    # The calls of every request, spelled out (``__getattr__`` is a slow path).
    def is_closing(self) -> bool:
        return self._closing or self._transport.is_closing()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _ignore(busy: bool) -> None:
    pass


def send_queue(sock: Any) -> int:
    """Bytes in a TCP socket's send queue not yet acknowledged by the peer (Linux
    ``TIOCOUTQ``); 0 for anything that is not a socket."""
    if sock is None:
        return 0
    try:
        raw = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    except (OSError, ValueError):
        return 0
    value: int = struct.unpack("i", raw)[0]
    return value
