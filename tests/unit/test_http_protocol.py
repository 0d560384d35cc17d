"""The corked transport: writes of one loop turn leave as one write, in order."""

from __future__ import annotations

import asyncio
from typing import Any

from onsale.kernel.http_protocol import CorkedTransport


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "write after close"
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1234) if name == "peername" else default


async def test_head_and_body_of_one_turn_leave_as_one_write() -> None:
    raw = FakeTransport()
    corked = CorkedTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    corked.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    corked.write(memoryview(b"{}"))
    assert raw.writes == []  # nothing leaves before the turn ends
    await asyncio.sleep(0)
    assert raw.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
    corked.write(b"next")
    await asyncio.sleep(0)
    assert raw.writes[1:] == [b"next"]


async def test_close_sends_what_is_pending_first() -> None:
    raw = FakeTransport()
    corked = CorkedTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    corked.write(b"bye")
    corked.close()
    assert raw.writes == [b"bye"] and raw.closed
    await asyncio.sleep(0)  # the scheduled flush finds nothing left and writes nothing
    assert raw.writes == [b"bye"]


async def test_other_attributes_reach_the_real_transport() -> None:
    raw = FakeTransport()
    corked = CorkedTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    assert corked.get_extra_info("peername") == ("127.0.0.1", 1234)
    assert corked.is_closing() is False
