"""Bounded HTTP against a real ``onsale serve --role core`` process and raw sockets
(docs/security.md#bounded-http): the pipelining flood, slowloris, oversized heads and
bodies, and the connection cap. Each ends with a legitimate request that succeeds and
a clean audit."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from onsale.embedded import EmbeddedValkey, free_port
from tests.conftest import ADMIN_TOKEN, SECRET, audit_clean
from tests.stack import ONSALE, Process

LIMITS = {
    "ONSALE_HTTP_HEADER_TIMEOUT": "1",
    "ONSALE_HTTP_KEEPALIVE_TIMEOUT": "1",
    "ONSALE_HTTP_MAX_BODY_BYTES": "65536",
    "ONSALE_HTTP_MAX_CONNECTIONS": "40",
}


class Core:
    def __init__(self, db_url: str, redis_url: str, **limits: str) -> None:
        self.port = free_port()
        self.db_url = db_url
        self.url = f"http://127.0.0.1:{self.port}"
        ops_port = free_port()
        self.ops_url = f"http://127.0.0.1:{ops_port}"
        env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": redis_url,
               "ONSALE_SECRET_KEY": SECRET, "ONSALE_ADMIN_TOKEN": ADMIN_TOKEN,
               "ONSALE_PUBLIC_URL": self.url, "ONSALE_OPS_PORT": str(ops_port), **limits}
        for name in ("ONSALE_STRIPE_SECRET_KEY", "ONSALE_CRASH_AT"):
            env.pop(name, None)
        self.process = Process([ONSALE, "serve", "--role", "core", "--host", "127.0.0.1",
                                "--port", str(self.port)], env, "serving on", "core")

    def rss_kib(self) -> int:
        status = Path(f"/proc/{self.process.proc.pid}/status").read_text()
        line = next(x for x in status.splitlines() if x.startswith("VmRSS:"))
        return int(line.split()[1])

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def audit(self) -> None:
        """``onsale audit`` on the database: nothing was lost or half-written."""
        done = subprocess.run([ONSALE, "audit"], env={**os.environ, "DATABASE_URL": self.db_url},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr

    def legit(self) -> None:
        """An ordinary request on a new connection still succeeds (database included),
        nothing was logged as an error, and the audit is clean."""
        r = httpx.get(f"{self.url}/api/events/1", timeout=5)  # the database answers
        assert r.status_code in (200, 404), r.text
        assert httpx.get(f"{self.ops_url}/readyz", timeout=5).status_code == 200
        logged = "".join(self.process.output)
        assert "Traceback" not in logged and "ERROR" not in logged, logged[-3000:]
        self.audit()


@pytest.fixture
def core(db_url: str, valkey: EmbeddedValkey) -> Iterator[Core]:
    server = Core(db_url, valkey.url, **LIMITS)
    try:
        yield server
    finally:
        server.process.stop()


def read_response(sock: socket.socket, buffer: bytearray) -> tuple[int, dict[str, str], bytes]:
    """One response (status, headers, body) from ``sock``; leftovers stay in ``buffer``."""
    while b"\r\n\r\n" not in buffer:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("closed before a response head")
        buffer += data
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("closed inside a response body")
        rest += data
    buffer[:] = rest[length:]
    return status, headers, rest[:length]


def closed_by_server(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (fails on the socket's timeout)."""
    out = b""
    while True:
        data = sock.recv(65536)
        if not data:
            return out
        out += data


def problem_code(body: bytes) -> Any:
    return json.loads(body)["code"]


async def test_a_pipelining_flood_is_served_in_turn_without_growing_memory(
        core: Core, conn: Any) -> None:
    request = (b"GET /nowhere HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 960 + b"\r\n\r\n")
    count = 10 * 1024 * 1024 // len(request)  # 10 MiB of pipelined requests
    before = core.rss_kib()
    sock = core.connect()
    peak = [before]
    answered = [0]
    errors: list[BaseException] = []

    def reader() -> None:
        buffer = bytearray()
        try:
            for _ in range(count):
                status, _, body = read_response(sock, buffer)
                assert status == 404 and json.loads(body)["code"] == "not_found"
                answered[0] += 1
                if answered[0] % 1000 == 0:
                    peak[0] = max(peak[0], core.rss_kib())
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    sock.sendall(request * count)
    thread.join(120)
    sock.close()
    assert not errors, errors
    assert answered[0] == count  # every request answered, in order
    assert peak[0] - before < 50 * 1024, f"RSS grew from {before} to {peak[0]} KiB"
    await asyncio.sleep(1)
    after = core.rss_kib()
    assert after - before < 50 * 1024, f"RSS stayed at {after} KiB (from {before})"
    core.legit()
    await audit_clean(conn)


def test_a_client_that_pipelines_without_reading_is_stopped_by_backpressure(
        core: Core) -> None:
    """The server stops reading the socket: the client cannot push its megabytes."""
    request = b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
    before = core.rss_kib()
    sock = core.connect()
    sock.setblocking(False)
    payload = memoryview(request * (10 * 1024 * 1024 // len(request)))
    sent = 0
    stalled_since = time.monotonic()
    while sent < len(payload) and time.monotonic() - stalled_since < 2:
        try:
            n = sock.send(payload[sent:sent + 65536])
        except BlockingIOError:
            time.sleep(0.01)
            continue
        sent += n
        stalled_since = time.monotonic()
    during = core.rss_kib()
    assert sent < len(payload), "the server read 10 MiB it could not answer"
    assert during - before < 50 * 1024, f"RSS grew from {before} to {during} KiB"
    sock.close()
    core.legit()


def test_slowloris_connections_are_closed_after_the_header_timeout(core: Core) -> None:
    loris = []
    for _ in range(30):
        s = core.connect()
        s.sendall(b"GET /nowhere HT")  # half a request line, then nothing
        loris.append(s)
    idle = core.connect()  # opened and never written to
    core.legit()  # served while they hang
    for s in [*loris, idle]:
        got = closed_by_server(s)  # the socket timeout (10 s) fails the test
        assert got.startswith(b"HTTP/1.1 408 "), got[:80]
        assert b'"code":"request_timeout"' in got
        s.close()
    core.legit()


def test_an_idle_keepalive_connection_is_closed(core: Core) -> None:
    s = core.connect()
    s.sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
    buffer = bytearray()
    assert read_response(s, buffer)[0] == 404  # a whole answer (health is on the ops port)
    assert closed_by_server(s) == b""  # then the keep-alive timeout closes it
    s.close()


def test_a_head_over_the_limit_gets_431(core: Core) -> None:
    for head in (b"GET /nowhere HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n",
                 b"GET /nowhere HTTP/1.1\r\n" + b"".join(b"X-H%d: 1\r\n" % i
                                                        for i in range(150)) + b"\r\n",
                 b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"):
        s = core.connect()
        s.sendall(head)
        status, headers, body = read_response(s, bytearray())
        assert status == 431 and problem_code(body) == "headers_too_large"
        assert headers["connection"] == "close"
        s.close()
    # A head that never ends is refused once it passes the limit, without waiting.
    s = core.connect()
    s.sendall(b"GET /nowhere HTTP/1.1\r\nX-Endless: " + b"b" * 40_000)
    got = closed_by_server(s)
    assert got.startswith(b"HTTP/1.1 431 ")
    s.close()
    core.legit()


def test_a_body_over_the_limit_is_refused_by_content_length_before_it_is_sent(
        core: Core) -> None:
    for path in ("/api/accounts", "/api/webhooks/payments", "/api/events/1/holds"):
        s = core.connect()
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: 10000000\r\n\r\n".encode())
        status, _, body = read_response(s, bytearray())  # no body byte was sent
        assert status == 413 and problem_code(body) == "payload_too_large"
        assert closed_by_server(s) == b""
        s.close()
    core.legit()


def test_a_streamed_body_is_cut_off_as_soon_as_it_passes_the_limit(core: Core) -> None:
    # The cut-off is in the HTTP layer, whatever the route: a sign-up and an operator route
    # (which read their bodies here; the webhook answers 503 first without a provider).
    for path in ("/api/accounts", "/api/ops/events"):
        s = core.connect()
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Authorization: Bearer {ADMIN_TOKEN}\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n".encode())
        chunk = b"%x\r\n%s\r\n" % (4096, b" " * 4096)
        sent = 0
        s.settimeout(0.05)
        got = b""
        while sent < 10 * 65536 and not got:
            try:
                s.sendall(chunk)
                sent += 4096
                got = s.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        s.settimeout(10)
        try:
            got += closed_by_server(s)
        except ConnectionResetError:
            pass
        assert got.startswith(b"HTTP/1.1 413 "), got[:80]
        assert b'"code":"payload_too_large"' in got
        assert sent < 3 * 65536  # refused while streaming, not after reading it all
        s.close()
    core.legit()


def test_past_the_connection_cap_a_new_connection_gets_503_and_the_open_ones_still_work(
        db_url: str, valkey: EmbeddedValkey) -> None:
    server = Core(db_url, valkey.url, ONSALE_HTTP_MAX_CONNECTIONS="10",
                  ONSALE_HTTP_HEADER_TIMEOUT="30")
    try:
        held = [server.connect() for _ in range(10)]
        time.sleep(0.2)  # let the server accept them all
        extra = server.connect()
        got = closed_by_server(extra)
        assert got.startswith(b"HTTP/1.1 503 ")
        assert b"retry-after: 1\r\n" in got and b'"code":"overloaded"' in got
        extra.close()
        # The connections inside the cap are served.
        held[0].sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(held[0], bytearray())[0] == 404
        for s in held:
            s.close()
        time.sleep(0.2)
        server.legit()  # room again once they are gone
    finally:
        server.process.stop()


def test_a_body_that_stops_arriving_is_dropped_after_the_timeout(core: Core) -> None:
    s = core.connect()
    s.sendall(b"POST /api/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 100\r\n\r\n{\"email\":")
    assert closed_by_server(s) == b""  # dropped (the socket timeout, 10 s, fails the test)
    s.close()
    core.legit()
