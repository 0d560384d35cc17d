"""Helpers for tests: uvicorn in a background thread on a port picked by the OS,
a webhook receiver that records what it gets, a settable clock, and polling.

    sock = reserve_socket()
    config = PspConfig(secret_key="sk_test_...", public_url=url_of(sock), ...)
    with ThreadedServer(build_psp_app(config), sock) as base_url:
        ...
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def reserve_socket(host: str = "127.0.0.1") -> socket.socket:
    """A listening-ready socket on a free port (hand it to :class:`ThreadedServer`)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}"


class ThreadedServer:
    """uvicorn serving ``app`` on ``sock`` in a daemon thread, lifespan included."""

    def __init__(self, app: Any, sock: socket.socket, *, startup_timeout: float = 15.0) -> None:
        self.sock = sock
        self.url = url_of(sock)
        self.startup_timeout = startup_timeout
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                loop="asyncio", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]},
                                       daemon=True, name=f"uvicorn-{self.url}")

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.01)
        return self.url

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class FakeClock:
    """A settable clock for ``build_psp_app(..., clock=...)``."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Delivery:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A webhook endpoint (``POST /hook``) that records every request; the first
    ``fail_next`` requests are answered ``fail_status``. Thread-safe enough for a
    receiver served by :class:`ThreadedServer` and read by the test."""

    fail_next: int = 0
    fail_status: int = 500
    received: list[Delivery] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> Starlette:
        async def hook(request: Request) -> Response:
            body = await request.body()
            with self._lock:
                status = self.fail_status if self.fail_next > 0 else 200
                self.fail_next = max(self.fail_next - 1, 0)
                self.received.append(Delivery(status, dict(request.headers), body))
            return Response(b'{"received": true}', status, media_type="application/json")

        return Starlette(routes=[Route("/hook", hook, methods=["POST"])])

    def accepted(self) -> list[Delivery]:
        with self._lock:
            return [d for d in self.received if 200 <= d.status < 300]


async def eventually(check: Callable[[], Awaitable[Any] | Any], within: float = 15.0,
                     interval: float = 0.02) -> Any:
    """Poll ``check`` (sync or async) until it returns something truthy; no timed
    assertion, just a generous deadline for a condition that must come true."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition still false after {within} s: {result!r}")
        await asyncio.sleep(interval)
