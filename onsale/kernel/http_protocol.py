"""uvicorn's httptools protocol, bounded against hostile clients, with coalesced writes.

**Bounds** (docs/security.md#bounded-http; the numbers are ``HttpLimits``):

- Incoming bytes are parsed in slices of ``SLICE`` bytes. After each slice, if
  ``max_pipelined`` requests are already waiting behind the one in progress, the
  rest is kept (at most one socket read) and the socket is no longer read until
  the queue shrinks: a client that pipelines megabytes is slowed to the speed
  it is served at, and never makes the process buffer them.
- A request head over ``max_head_bytes`` or ``max_headers`` is answered 431; a
  ``Content-Length`` over ``max_body_bytes`` is answered 413 before any of the
  body is read, and a streamed (chunked) body is cut off with 413 as soon as it
  passes the limit. Each of these closes the connection.
- A connection must send a whole request head within ``header_timeout`` of its
  first byte (or of being opened), else it gets 408 and is closed; a request
  body must arrive whole within as long again after its head (else the request
  is dropped and the connection closed); an idle keep-alive connection is
  closed after ``keepalive_timeout``.
- Past ``max_connections`` open HTTP connections in the process, a new one is
  answered 503 with ``Retry-After`` and closed at once. (A WebSocket leaves the
  count when it upgrades; the seat map caps sockets per account itself.) The cap on requests
  in progress is ``onsale.kernel.http_server.RequestLimit``.

**Writes** (``onsale.kernel.http_writes``): small answers are corked (sent once at
the end of the loop turn), large bodies are streamed a chunk at a time under the
transport's flow control, a peer that leaves answers unread past ``write_timeout``
is aborted by the same sweep that enforces the head deadlines, and the unsent bytes
of all connections are counted against ``max_unsent_bytes``.

This subclasses uvicorn internals: the versions it is tested with are pinned in
pyproject.toml, and ``tests/unit/test_uvicorn_pin.py`` fails when the uvicorn
code it relies on changes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from onsale.kernel.http_limits import (
    HttpLimits,
    head_refusal,
    partial_head_too_large,
    refusal_body,
    refusal_bytes,
    write_overdue,
)
from onsale.kernel.http_writes import CorkedTransport, UnsentLedger

SLICE = 1024  # bytes parsed before the pipeline is looked at again
SWEEP_SECONDS = 0.5  # how often head deadlines are checked
REASONS = {400: "Bad Request", 408: "Request Timeout", 413: "Content Too Large",
           431: "Request Header Fields Too Large", 503: "Service Unavailable"}
log = logging.getLogger("onsale.http")


class HeldFlow(FlowControl):
    """uvicorn resumes reading whenever a request reads its body or a response ends;
    while bytes are held back (the pipeline is full) reading stays paused. Writing is
    paused while the writer streams a body or the transport is over its high water."""

    def __init__(self, transport: asyncio.Transport, protocol: BoundedHttpProtocol) -> None:
        super().__init__(transport)
        self._protocol = protocol

    def resume_reading(self) -> None:
        protocol = self._protocol
        if protocol._held:  # a response ended or a request reads on: parse what was held
            protocol.loop.call_soon(protocol._resume_held)
        elif not protocol._stopped:
            super().resume_reading()

    def writing_held(self, held: bool) -> None:
        if held:
            self.pause_writing()
        else:
            self.resume_writing()


async def _refuse_app(status: int, scope: Any, receive: Any, send: Any) -> None:
    body = refusal_body(status)
    headers = [(b"content-type", b"application/problem+json"),
               (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _refusal(status: int) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _refuse_app(status, scope, receive, send)
    return app


_APPS = {status: _refusal(status) for status in (400, 413, 431)}


class BoundedHttpProtocol(HttpToolsProtocol):
    """See the module docstring. ``limits`` is set per server by ``protocol_class``."""

    limits: ClassVar[HttpLimits] = HttpLimits()
    ledger: ClassVar[UnsentLedger] = UnsentLedger(HttpLimits().max_unsent_bytes)
    _sweeper: ClassVar[asyncio.TimerHandle | None] = None  # one per server (class)
    _open: ClassVar[int] = 0  # HTTP connections of this server (a WebSocket leaves)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._held = bytearray()     # bytes received but not parsed (pipeline full)
        self._stopped = False        # refused: parse nothing more on this connection
        self._in_head = False        # between a message's first byte and its headers' end
        self._head_counted = 0       # bytes fed while in a head (overstates by < SLICE)
        self._head_size = 0          # the finished headers' exact size
        self._header_count = 0
        self._body_bytes = 0
        self._counted = False
        self._content_length: bytes | None = None
        self._head_deadline = 0.0    # loop time by which the head (then the body's next
                                     # bytes) must arrive; 0: none

    # Connection ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        corked = CorkedTransport(transport, asyncio.get_running_loop(), self.ledger,
                                 self.limits.write_timeout)
        super().connection_made(corked)  # type: ignore[arg-type]
        self.flow = flow = HeldFlow(corked, self)  # type: ignore[arg-type]
        corked.on_busy = flow.writing_held
        self._writer = corked
        cls = type(self)
        cls._open += 1
        self._counted = True
        if cls._open > self.limits.max_connections:
            self._stopped = True
            log.debug("connection refused: %d open", cls._open)
            self.transport.write(refusal_bytes(503, REASONS[503]))
            self.transport.close()
            return
        self._arm_head_timer()

    def _uncount(self) -> None:
        if self._counted:
            self._counted = False
            type(self)._open -= 1

    def connection_lost(self, exc: Exception | None) -> None:
        self._uncount()
        self._writer.forget()
        self._cancel_head_timer()
        self._held.clear()
        super().connection_lost(exc)

    def handle_websocket_upgrade(self) -> None:
        """A WebSocket gets the real transport: it writes whole frames, often one to
        each of thousands of sockets in one loop turn (the seat map's fan-out)."""
        self._cancel_head_timer()
        self._uncount()  # uvicorn's socket protocol joins server_state.connections instead
        self._stopped = True  # what follows the upgrade is the WebSocket's
        corked = self.transport
        if isinstance(corked, CorkedTransport):
            busy = self.pipeline or (self.cycle is not None and not self.cycle.response_complete)
            if busy or corked.holding():
                # An earlier request on this connection is still being answered: its
                # bytes and the WebSocket's would share the socket. No upgrade.
                corked.abort()
                return
            self.transport = corked.raw()
        super().handle_websocket_upgrade()

    def eof_received(self) -> bool | None:  # type: ignore[override]
        """The client shut its sending side (``printf 'GET …' | nc``). While a request
        is being answered, or an answer is still on its way (in user space, or maybe
        in the socket's send queue), keep the connection: it is closed after the last
        answer once the client has taken it all, or aborted at the write deadline;
        closing now would drop the answer, cut it short, or leave it to the kernel."""
        writer = self._writer
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.keep_alive = False  # answer what was asked, then close (as above)
            return True
        if writer.holding() or writer.deadline:
            writer.close()
            return True
        return None

    # Writing (the transport's flow control goes through the writer) -------------

    def pause_writing(self) -> None:
        self._writer.transport_paused()

    def resume_writing(self) -> None:
        self._writer.transport_resumed()

    # Reading ------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._stopped:
            return
        if self._held:
            self._held += data
            self.flow.pause_reading()
            return
        self._feed(data)

    def _feed(self, data: bytes | bytearray) -> None:
        self._unset_keepalive_if_required()
        if len(data) <= SLICE:  # the usual case: one request, or a part of one
            if len(self.pipeline) >= self.limits.max_pipelined:
                self._held += data
                self.flow.pause_reading()
            else:
                self._feed_slice(data)
            return
        view = memoryview(data)
        size = len(view)
        pos = 0
        while pos < size and not self._stopped:
            if len(self.pipeline) >= self.limits.max_pipelined:
                self._held += view[pos:]
                self.flow.pause_reading()
                return
            chunk = view[pos:pos + SLICE]
            pos += len(chunk)
            if not self._feed_slice(chunk):
                return

    def _feed_slice(self, chunk: bytes | bytearray | memoryview) -> bool:
        """Parse one slice; False when nothing more may be parsed."""
        if not self._head_deadline:
            self._head_deadline = self.loop.time() + self.limits.header_timeout
            if type(self)._sweeper is None:
                self._arm_head_timer()
        try:
            self.parser.feed_data(chunk)
        except httptools.HttpParserUpgrade:
            if self._stopped:  # the head was refused (on_headers_complete): no upgrade
                return False
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return False
        except httptools.HttpParserError:
            if not self._stopped:
                log.debug("invalid HTTP request from %s", self.client)
                self._abort(400)
            return False
        if self._in_head:
            self._head_counted += len(chunk)
            if partial_head_too_large(self.limits, self._head_counted, SLICE):
                self._abort(431)
                return False
        return not self._stopped

    def _resume_held(self) -> None:
        if (self._held and not self.transport.is_closing() and not self._stopped
                and len(self.pipeline) < self.limits.max_pipelined):
            data = bytes(self._held)
            self._held.clear()
            self._feed(data)
            if not self._held and not self._stopped:
                self.flow.resume_reading()

    # Parser callbacks -----------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_counted = self._head_size = self._header_count = self._body_bytes = 0
        self._content_length = None

    def on_header(self, name: bytes, value: bytes) -> None:
        # uvicorn's on_header, plus the count, the size and Content-Length (the
        # pin test in tests/unit/test_uvicorn_pin.py watches the original).
        self._header_count += 1
        self._head_size += len(name) + len(value) + 4
        if self._header_count > self.limits.max_headers:
            return  # the head is refused when it ends; nothing more is stored
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        elif name == b"content-length":
            self._content_length = value
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        # From here the deadline is the body's: it must arrive whole within the header
        # timeout (one that trickles in, or never comes, would hold a request slot).
        self._in_head = False
        limits = self.limits
        self._head_deadline = self.loop.time() + limits.header_timeout
        if (self._content_length is None and self._header_count <= limits.max_headers
                and self._head_size + len(self.url) <= limits.max_head_bytes):
            super().on_headers_complete()
            return
        status = head_refusal(limits, head_bytes=len(self.url) + self._head_size,
                              header_count=self._header_count,
                              content_length=self._content_length)
        if status is None:
            super().on_headers_complete()
            return
        if self.parser.should_upgrade():  # no request cycle for an upgrade: refuse here
            self._abort(status)
            return
        # Answer in turn (after any pipelined requests before it), then close: what
        # follows on this connection is not read.
        self._stopped = True
        self.flow.pause_reading()
        app = self.app
        self.app = _APPS[status]
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_body(self, body: bytes) -> None:
        if self._stopped:
            return
        self._body_bytes += len(body)
        if self._body_bytes > self.limits.max_body_bytes:
            self._body_too_large()
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._head_deadline = 0.0
        if not self._stopped:
            super().on_message_complete()

    def _body_too_large(self) -> None:
        """A streamed body passed the limit: 413 now if the request is the one in
        progress and has no response yet, else just close; the app sees a disconnect."""
        self._stopped = True
        cycle = self.cycle
        answer = not self.pipeline and not cycle.response_started
        cycle.disconnected = True
        cycle.message_event.set()
        if answer:
            self.transport.write(refusal_bytes(413, REASONS[413]))
        self.transport.close()

    # Timers ---------------------------------------------------------------------
    # A head's deadline and a write deadline are numbers on the connection, looked at
    # every SWEEP_SECONDS by one sweep over the server's connections: no timer is armed
    # or cancelled per request.

    def _arm_head_timer(self) -> None:
        self._head_deadline = self.loop.time() + self.limits.header_timeout
        cls = type(self)
        if cls._sweeper is None:
            cls._sweeper = self.loop.call_later(SWEEP_SECONDS, self._sweep, self.connections)

    def _cancel_head_timer(self) -> None:
        self._head_deadline = 0.0

    @classmethod
    def _sweep(cls, connections: set[Any]) -> None:
        cls._sweeper = None
        if not connections:
            return  # the next connection starts the sweep again
        loop = asyncio.get_running_loop()
        now = loop.time()
        for protocol in list(connections):
            deadline = getattr(protocol, "_head_deadline", 0.0)
            if deadline and deadline <= now:
                protocol._head_timeout()
            writer = getattr(protocol, "_writer", None)
            if writer is not None and writer.deadline:
                writer.observe(kernel=True)  # drained since the last look?
                if write_overdue(writer.deadline, now):
                    log.info("aborted %s: %d bytes unread after the write deadline",
                             protocol.client, writer.unsent())
                    writer.abort()
        if connections and cls._sweeper is None:
            cls._sweeper = loop.call_later(SWEEP_SECONDS, cls._sweep, connections)

    def _head_timeout(self) -> None:
        self._head_deadline = 0.0
        if not self.transport.is_closing():
            log.debug("request head timed out from %s", self.client)
            self._abort(408)

    def _abort(self, status: int) -> None:
        """Stop reading; answer ``status`` if nothing is in progress, then close."""
        self._stopped = True
        self._cancel_head_timer()
        idle = not self.pipeline and (self.cycle is None or self.cycle.response_complete)
        if idle and not self.transport.is_closing():
            self.transport.write(refusal_bytes(status, REASONS[status]))
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.close()


def protocol_class(limits: HttpLimits,
                   ledger: UnsentLedger | None = None) -> type[BoundedHttpProtocol]:
    """The protocol for one server, with its limits and its ledger of unsent bytes."""
    return type("OnsaleHttpProtocol", (BoundedHttpProtocol,), {
        "limits": limits, "ledger": ledger or UnsentLedger(limits.max_unsent_bytes)})


# The name earlier code imported.
CorkedHttpToolsProtocol = BoundedHttpProtocol
