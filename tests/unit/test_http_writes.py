"""The write side of a connection (onsale.kernel.http_writes): large bodies streamed
under the transport's flow control, the write deadline, the ledger of unsent bytes,
and the verdicts behind them (onsale.kernel.http_limits)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from onsale.kernel.http_limits import large_answer, write_deadline, write_overdue
from onsale.kernel.http_writes import (
    CHUNK,
    HIGH_WATER,
    CorkedTransport,
    UnsentLedger,
    send_queue,
)


class PeerTransport:
    """A transport whose peer reads only when told: written bytes wait in ``buffer``,
    and the writer is paused past the high-water mark as a real transport does."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.sent = bytearray()
        self.high = 64 * 1024
        self.paused = False
        self.closed = self.aborted = self.eof = False
        self.writer: CorkedTransport | None = None
        self.writes = 0

    def set_write_buffer_limits(self, high: int) -> None:
        self.high = high

    def write(self, data: Any) -> None:
        assert not self.closed, "write after close"
        self.writes += 1
        self.buffer += data
        if len(self.buffer) > self.high and not self.paused:
            self.paused = True
            assert self.writer is not None
            self.writer.transport_paused()

    def peer_reads(self, n: int) -> None:
        self.sent += self.buffer[:n]
        del self.buffer[:n]
        if self.paused and len(self.buffer) <= self.high // 4:
            self.paused = False
            assert self.writer is not None
            self.writer.transport_resumed()

    def get_write_buffer_size(self) -> int:
        return len(self.buffer)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default  # no socket: its send queue reads as empty

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof = True

    def abort(self) -> None:
        self.closed = self.aborted = True
        self.buffer.clear()


def writer_on(peer: PeerTransport, ledger: UnsentLedger, timeout: float = 10.0) -> CorkedTransport:
    writer = CorkedTransport(peer, asyncio.get_running_loop(), ledger, timeout)  # type: ignore[arg-type]
    peer.writer = writer
    return writer


async def test_a_large_body_is_fed_a_chunk_at_a_time_while_the_transport_takes_more() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    busy: list[bool] = []
    writer.on_busy = busy.append
    body = bytes(range(256)) * 4096  # 1 MiB
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n")
    writer.write(body)
    assert peer.high == HIGH_WATER  # the writer set the transport's mark
    assert len(peer.buffer) <= HIGH_WATER + CHUNK  # not the whole body
    assert busy == [True]  # uvicorn's next response waits
    assert ledger.total >= len(body) + 44  # handed-over bytes count until a look
    writer.observe(kernel=True)
    assert ledger.total == len(body) + 44 - len(peer.sent)
    while peer.buffer:
        peer.peer_reads(7000)
        assert len(peer.buffer) <= HIGH_WATER + CHUNK
    assert bytes(peer.sent) == b"HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n" + body
    writer.observe(kernel=True)
    assert ledger.total == 0 and busy == [True, False] and writer.deadline == 0.0


async def test_small_writes_after_a_streaming_body_keep_their_order() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    body = b"b" * (3 * HIGH_WATER)
    writer.write(body)
    writer.write(b"next answer")
    await asyncio.sleep(0)
    while peer.buffer:
        peer.peer_reads(4096)
    assert bytes(peer.sent) == body + b"next answer"


async def test_close_waits_for_the_stream_and_then_closes() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    writer.write(b"x" * (4 * HIGH_WATER))
    writer.close()
    assert not peer.closed and writer.is_closing()
    writer.write(b"late")  # nothing is written after close
    while peer.buffer:
        peer.peer_reads(8192)
    assert not peer.closed  # the send queue is not looked at yet: it may hold more
    writer.observe(kernel=True)  # the sweep: all of it taken
    assert peer.closed and bytes(peer.sent) == b"x" * (4 * HIGH_WATER)


async def test_a_close_after_a_large_answer_waits_for_the_kernel_to_send_it() -> None:
    """The kernel took the whole answer at once; a graceful close now would leave it in
    an orphan socket: the connection stays until the peer took it, or is aborted."""
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger, timeout=0.05)
    in_kernel = [4 * CHUNK]
    writer.send_queue = lambda sock: in_kernel[0]
    peer.high = 1 << 30
    writer.write(b"k" * (4 * CHUNK))
    peer.peer_reads(len(peer.buffer))  # out of user space, into the kernel's queue
    writer.close()
    writer.observe(kernel=True)
    assert not peer.closed and writer.deadline > 0.0 and ledger.total == 4 * CHUNK
    assert peer.eof  # the write side is shut: the peer sees its end after the last byte
    await asyncio.sleep(0.06)
    writer.observe(kernel=True)
    assert write_overdue(writer.deadline, asyncio.get_running_loop().time())
    writer.abort()
    assert peer.aborted and ledger.total == 0


async def test_a_close_after_a_large_answer_closes_once_the_peer_took_it() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    in_kernel = [4 * CHUNK]
    writer.send_queue = lambda sock: in_kernel[0]
    peer.high = 1 << 30
    writer.write(b"k" * (4 * CHUNK))
    peer.peer_reads(len(peer.buffer))
    writer.close()
    writer.observe(kernel=True)
    assert not peer.closed
    in_kernel[0] = 0  # the peer read it
    writer.observe(kernel=True)
    assert peer.closed and not peer.aborted and ledger.total == 0


async def test_small_answers_stay_corked_into_one_write() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    writer.write(b"head")
    writer.write(b"body")
    assert peer.writes == 0
    await asyncio.sleep(0)
    assert peer.writes == 1 and bytes(peer.buffer) == b"headbody"


async def test_unread_bytes_arm_the_deadline_and_draining_restarts_it() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    loop = asyncio.get_running_loop()
    writer = writer_on(peer, ledger, timeout=10.0)
    writer.write(b"y" * (8 * HIGH_WATER))
    first = writer.deadline
    assert loop.time() < first <= loop.time() + 10.0
    await asyncio.sleep(0.01)
    writer.observe(kernel=True)
    assert writer.deadline == first  # no progress: the same deadline
    peer.peer_reads(len(peer.buffer))  # drained below low water: resumed, restarted
    assert writer.deadline > first
    while peer.buffer:
        peer.peer_reads(len(peer.buffer))
    writer.observe()
    assert writer.deadline > 0.0  # user space alone never lifts it (the kernel may hold more)
    writer.observe(kernel=True)
    assert writer.deadline == 0.0


async def test_a_large_body_the_kernel_took_at_once_still_arms_the_deadline() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    peer.high = 1 << 30  # everything leaves user space at once
    writer.write(b"k" * (4 * CHUNK))
    assert writer.deadline > 0.0


async def test_a_small_answer_left_in_the_buffer_arms_the_deadline() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    writer.write(b"small")
    await asyncio.sleep(0)
    assert writer.deadline > 0.0 and ledger.total == 5


async def test_abort_drops_everything_and_leaves_the_ledger() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    other = writer_on(PeerTransport(), ledger)
    writer.write(b"z" * (10 * HIGH_WATER))
    other.write(b"w" * (2 * HIGH_WATER))
    writer.observe(kernel=True)
    other.observe(kernel=True)
    both = ledger.total
    assert both == 12 * HIGH_WATER
    writer.abort()
    assert peer.aborted and ledger.total == 2 * HIGH_WATER and ledger.aborted == 1
    writer.forget()  # connection_lost after the abort: counted once
    assert ledger.total == 2 * HIGH_WATER


async def test_after_the_connection_is_lost_nothing_is_written_or_counted() -> None:
    """A request still running when its connection was lost may write its answer
    after forget(): it must not reach the transport, nor stay in the ledger."""
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    busy: list[bool] = []
    writer.on_busy = busy.append
    writer.write(b"a" * (4 * HIGH_WATER))
    writer.forget()
    assert ledger.total == 0 and busy == [True, False]  # uvicorn's flow is let go
    writes = peer.writes
    writer.write(b"HTTP/1.1 200 OK\r\n\r\n")
    writer.write(b"b" * (4 * HIGH_WATER))
    await asyncio.sleep(0)
    writer.observe(kernel=True)
    assert peer.writes == writes and ledger.total == 0 and writer.deadline == 0.0


async def test_a_websocket_takes_the_transport_and_the_writer_is_done() -> None:
    peer, ledger = PeerTransport(), UnsentLedger(1 << 30)
    writer = writer_on(peer, ledger)
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")
    assert writer.raw() is peer and bytes(peer.buffer).startswith(b"HTTP/1.1 101")
    writer.write(b"c" * (4 * HIGH_WATER))  # a late HTTP write: dropped
    assert ledger.total == 0 and writer.holding() == len(peer.buffer)


def test_the_deadline_verdicts() -> None:
    assert write_deadline(0, 0.0, 100.0, 15.0) == 0.0
    assert write_deadline(0, 112.0, 100.0, 15.0) == 0.0
    assert write_deadline(0, 112.0, 100.0, 15.0, progressed=True) == 0.0
    assert write_deadline(10, 0.0, 100.0, 15.0) == 115.0
    assert write_deadline(10, 112.0, 100.0, 15.0) == 112.0
    assert write_deadline(10, 112.0, 100.0, 15.0, progressed=True) == 115.0
    assert not write_overdue(0.0, 100.0)
    assert not write_overdue(100.5, 100.0)
    assert write_overdue(100.0, 100.0) and write_overdue(99.0, 100.0)


def test_which_answers_are_large() -> None:
    assert not large_answer([(b"content-length", b"16384")], 16384)
    assert large_answer([(b"Content-Length", b"16385")], 16384)
    assert large_answer([(b"content-type", b"text/html")], 16384)  # length unknown
    assert large_answer([(b"content-length", b"x")], 16384)


def test_the_ledger_is_over_at_its_cap() -> None:
    ledger = UnsentLedger(100)
    ledger.total = 99
    assert not ledger.over()
    ledger.total = 100
    assert ledger.over()


def test_the_send_queue_is_what_the_peer_has_not_taken() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    client.connect(listener.getsockname())
    server, _ = listener.accept()
    try:
        assert send_queue(server) == 0
        server.setblocking(False)
        sent = 0
        try:
            while True:
                sent += server.send(b"q" * 65536)
        except BlockingIOError:
            pass
        assert 0 < send_queue(server) <= sent  # the peer's window is full: it waits
        assert send_queue(None) == 0
    finally:
        for s in (client, server, listener):
            s.close()

