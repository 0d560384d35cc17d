"""Bounded HTTP and WebSocket upgrades, on a small app served by onsale's own uvicorn
configuration in a thread (docs/security.md#bounded-http): a refused head is refused
for an upgrade too, and WebSockets do not use up the HTTP connection cap."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket
from websockets.sync.client import connect as ws_connect

from onsale.kernel.http_limits import HttpLimits
from onsale.kernel.http_server import uvicorn_config
from tests.integration.test_http_limits import closed_by_server, read_response


async def hello(request: Any) -> JSONResponse:
    return JSONResponse({"ok": True})


async def echo(websocket: WebSocket) -> None:
    await websocket.accept()
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        await websocket.send_text(message.get("text") or "")


@pytest.fixture
def server() -> Iterator[int]:
    app = Starlette(routes=[Route("/", hello), WebSocketRoute("/ws", echo)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    limits = HttpLimits(max_connections=3, header_timeout=1.0, max_body_bytes=4096)
    config = uvicorn_config(app, "127.0.0.1", port, limits, log_level="warning",
                            access_log=False, lifespan="off", ws="websockets-sansio")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        assert thread.is_alive()
        time.sleep(0.01)
    try:
        yield port
    finally:
        srv.should_exit = True
        thread.join(10)
        sock.close()


UPGRADE = ("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n")


def raw(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def test_an_upgrade_with_a_refused_head_is_refused_not_upgraded(server: int) -> None:
    too_many = UPGRADE + "".join(f"X-H{i}: 1\r\n" for i in range(150)) + "\r\n"
    too_long = UPGRADE + "Content-Length: 99999999\r\n\r\n"
    for head, status in ((too_many, 431), (too_long, 413)):
        s = raw(server)
        s.sendall(head.encode())
        got = closed_by_server(s)  # answered and closed, never left hanging
        assert got.startswith(b"HTTP/1.1 %d " % status), got[:60]
        s.close()
    with ws_connect(f"ws://127.0.0.1:{server}/ws") as ws:  # a proper upgrade still works
        ws.send("hi")
        assert ws.recv(timeout=5) == "hi"


def test_websockets_do_not_use_up_the_http_connection_cap(server: int) -> None:
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(ws_connect(f"ws://127.0.0.1:{server}/ws"))
                   for _ in range(5)]  # the cap is 3
        for _ in range(3):  # HTTP connections still fit under the cap beside them
            s = raw(server)
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(s, bytearray())[0] == 200
            s.close()
        held = [raw(server) for _ in range(3)]
        time.sleep(0.2)  # accepted by the server
        extra = raw(server)
        assert closed_by_server(extra).startswith(b"HTTP/1.1 503 ")  # the HTTP cap holds
        extra.close()
        for s in held:
            s.close()
        for ws in sockets:  # and every socket is still served
            ws.send("still here")
            assert ws.recv(timeout=5) == "still here"


def test_a_body_that_trickles_in_is_dropped_after_the_timeout(server: int) -> None:
    s = raw(server)
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
    sent = 0
    dropped = False
    s.settimeout(0.3)
    started = time.monotonic()
    while time.monotonic() - started < 8:  # a byte every 0.3 s never finishes 1000
        try:
            s.sendall(b"a")
            sent += 1
            if s.recv(100) == b"":
                dropped = True
                break
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            dropped = True
            break
    s.close()
    assert dropped, "a trickling body kept its request open"
    assert sent < 100
