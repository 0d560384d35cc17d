"""Clients that never read their answers, against real ``onsale serve`` processes over
raw sockets (docs/security.md#bounded-http): hundreds of connections ask for the
largest public answers (the venue layout, a draw page) with a tiny receive window and
never read. The server's memory stays bounded, each such connection is aborted after
the write deadline, past the cap of unsent bytes a large answer is refused with
``503 overloaded``, and a shopper's poll and hold succeed meanwhile. Ends with a clean
audit."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import struct
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from onsale.edge.queries import queries
from onsale.embedded import EmbeddedPostgres, free_port
from tests.conftest import ADMIN_TOKEN, audit_clean
from tests.stack import ONSALE, Process, Stack, connected, eventually, started_stack

WRITE_TIMEOUT = 3.0
SLOW = 250  # connections per target (the venue on core, the draw on the edge: 500 in all)


@pytest.fixture(scope="module")
async def stack(pg: EmbeddedPostgres, template_db: str,
                tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ONSALE_HTTP_WRITE_TIMEOUT", str(WRITE_TIMEOUT))
        # Shorter than the write deadline, as by default (5 s and 15 s): the keep-alive
        # close must not hand a never-read answer to the kernel and forget it.
        env.setenv("ONSALE_HTTP_KEEPALIVE_TIMEOUT", "1")
        async with started_stack(pg, template_db, tmp_path_factory.mktemp("slow")) as s:
            yield s


@pytest.fixture
async def db(stack: Stack) -> AsyncIterator[Any]:
    async with connected(stack) as conn:
        yield conn


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(x for x in status.splitlines() if x.startswith("VmRSS:")).split()[1])


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def slow_reader(port: int, path: str, n: int) -> socket.socket:
    """A connection with a tiny receive window that asks for ``path`` and never reads
    (from an address of its own: the draw is throttled per address)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)  # before connect: the window
    sock.bind((f"127.0.{10 + n // 250}.{1 + n % 250}", 0))
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n"
                 .encode())
    return sock


def how_it_ended(sock: socket.socket) -> str:
    """``reset`` when the server aborted the connection, else the status line of the
    answer it sent whole before closing."""
    got = b""
    try:
        while True:
            data = sock.recv(1 << 20)
            if not data:
                return got[:12].decode()
            got += data
    except ConnectionResetError:
        return "reset"


async def metric(url: str, name: str) -> float:
    async with httpx.AsyncClient(timeout=10) as c:
        text = (await c.get(f"{url}/metrics")).text
    found = re.search(rf"^{name}(?:_total)? (\S+)$", text, re.M)
    assert found, f"{name} not in /metrics"
    return float(found.group(1))


async def new_event(stack: Stack, seats: int) -> int:
    async with stack.client() as c:
        r = await c.post("/api/ops/events", json={
            "name": "Slow readers", "seats": seats, "queue_policy": "passthrough",
            "max_tickets_per_account": 10}, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 201, r.text
    return int(r.json()["event_id"])


async def published_draw(stack: Stack, db: Any, participants: int) -> int:
    """An event whose random draw of ``participants`` accounts is published, written as
    the admitter writes it."""
    async with stack.client() as c:
        r = await c.post("/api/ops/events", json={
            "name": "Slow draw", "seats": 10, "queue_policy": "random",
            "onsale_at": "2999-01-01T00:00:00Z"},
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 201, r.text
    event_id = int(r.json()["event_id"])
    members = sorted(str(uuid.uuid4()) for _ in range(participants))
    await db.execute(queries("queue")["record_draw"], event_id, members)
    await db.execute(queries("queue")["reveal_seed"], event_id)
    return event_id


async def new_account(db: Any) -> uuid.UUID:
    account: uuid.UUID = await db.fetchval(
        "INSERT INTO accounts (email, password_hash) VALUES ($1, 'x') RETURNING account_id",
        f"slow-{uuid.uuid4().hex[:10]}@example.com")
    return account


@contextlib.contextmanager
def readers(port: int, path: str, count: int) -> Iterator[list[socket.socket]]:
    socks = [slow_reader(port, path, n) for n in range(count)]
    try:
        yield socks
    finally:
        for s in socks:
            s.close()


async def test_clients_that_never_read_are_aborted_and_memory_stays_bounded(
        stack: Stack, db: Any) -> None:
    event_id = await new_event(stack, 30_000)
    venue = f"/api/events/{event_id}/venue"
    draw = f"/api/events/{await published_draw(stack, db, 20_000)}/queue/draw"
    async with httpx.AsyncClient(timeout=30) as c:
        r = await c.get(stack.core_url + venue, headers={"Accept-Encoding": "identity"})
        assert r.status_code == 200 and len(r.content) > 500_000  # a large answer
        page = await c.get(stack.edge_url + draw)
        assert page.status_code == 200 and len(page.content) > 300_000, page.text[:300]
    assert stack.core is not None and stack.edge is not None
    pid, edge_pid = stack.core.proc.pid, stack.edge.proc.pid
    edge_before = rss_kib(edge_pid)
    aborted_before = await metric(stack.core_ops_url, "onsale_http_write_timeouts")
    refused_before = await metric(stack.core_ops_url, "onsale_http_large_answers_refused")
    before = rss_kib(pid)
    me = await new_account(db)
    with readers(port_of(stack.core_url), venue, SLOW) as socks, \
            readers(port_of(stack.edge_url), draw, SLOW) as draw_socks:
        peak, edge_peak = rss_kib(pid), rss_kib(edge_pid)
        # A shopper is served meanwhile: a hold (core) and a queue poll (edge).
        async with stack.client(me) as shopper:
            hold = await shopper.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1]},
                                      headers={"Idempotency-Key": uuid.uuid4().hex})
            assert hold.status_code == 201, hold.text
        async with httpx.AsyncClient(base_url=stack.edge_url, timeout=30,
                                     cookies=shopper.cookies) as edge:
            poll = await edge.get(f"/api/events/{event_id}/queue")
            assert poll.status_code in (200, 404), poll.text  # served, not stalled
        peak = max(peak, rss_kib(pid))
        unsent = await metric(stack.core_ops_url, "onsale_http_unsent_bytes")
        assert unsent > 0  # the server does hold answers for them

        # Each slow reader is aborted at its write deadline, or was refused its large
        # answer (503 overloaded) once the unsent bytes passed the server's cap.
        async def all_ended() -> bool:
            aborted = await metric(stack.core_ops_url, "onsale_http_write_timeouts")
            refused = await metric(stack.core_ops_url, "onsale_http_large_answers_refused")
            return aborted - aborted_before + refused - refused_before >= SLOW
        assert await eventually(all_ended, within=60)
        peak = max(peak, rss_kib(pid))
        aborted = await metric(stack.core_ops_url, "onsale_http_write_timeouts") - aborted_before
        assert aborted >= 100  # the cap (128 MiB) holds more than a hundred of these
        assert await metric(stack.core_ops_url, "onsale_http_unsent_bytes") == 0
        ends = [how_it_ended(s) for s in socks]
        edge_peak = max(edge_peak, rss_kib(edge_pid))
        draw_ends = [how_it_ended(s) for s in draw_socks]
    # Aborted (the client sees a reset) or refused (a 503, then the keep-alive close).
    # On a loaded machine some clients saw the start of their answer and then an end
    # of file instead of the reset: the server's side is what the bound is about, and
    # the metrics above show every connection aborted or refused and nothing held.
    assert set(ends) <= {"reset", "HTTP/1.1 503", "HTTP/1.1 200"}, Counter(ends)
    assert aborted >= ends.count("reset") >= min(100, aborted)
    assert set(draw_ends) <= {"reset", "HTTP/1.1 503", "HTTP/1.1 200"}, Counter(draw_ends)
    assert draw_ends.count("reset") >= 100
    assert edge_peak - edge_before < 50 * 1024, f"edge RSS grew {edge_peak - edge_before} KiB"
    assert peak - before < 50 * 1024, f"RSS grew by {(peak - before) // 1024} MiB"
    await audit_clean(db)


async def test_past_the_cap_of_unsent_bytes_large_answers_are_refused(
        stack: Stack, db: Any) -> None:
    """A second core with a small cap: slow readers fill it, then a large answer is
    503 overloaded while a small one (the event) is still served."""
    event_id = await new_event(stack, 30_000)
    venue = f"/api/events/{event_id}/venue"
    small_port = free_port()
    env = stack.core_env(ONSALE_HTTP_MAX_UNSENT_BYTES=str(1024 * 1024),
                         ONSALE_HTTP_WRITE_TIMEOUT="30",
                         ONSALE_PUBLIC_URL=f"http://127.0.0.1:{small_port}")
    small = Process([ONSALE, "serve", "--role", "core", "--port", str(small_port)], env,
                    "serving on", "core-small-cap")
    url = f"http://127.0.0.1:{small_port}"
    ops = f"http://127.0.0.1:{env['ONSALE_OPS_PORT']}"  # its ops listener: /metrics
    try:
        with readers(small_port, venue, 40):
            async def capped() -> bool:
                return await metric(ops, "onsale_http_unsent_bytes") >= 1024 * 1024
            assert await eventually(capped, within=30)
            async with httpx.AsyncClient(base_url=url, timeout=30) as c:
                large = await c.get(venue, headers={"Accept-Encoding": "identity"})
                assert large.status_code == 503, large.status_code
                assert large.json()["code"] == "overloaded"
                assert large.headers["retry-after"] == "1"
                small_answer = await c.get(f"/api/events/{event_id}")
                assert small_answer.status_code == 200
            assert await metric(ops, "onsale_http_large_answers_refused") >= 1
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:
            async def served() -> bool:  # the readers are gone: large answers again
                got = await c.get(venue, headers={"Accept-Encoding": "identity"})
                return got.status_code == 200
            assert await eventually(served, within=30)
    finally:
        small.stop()
    await audit_clean(db)


async def test_answers_written_after_a_reset_leave_nothing_in_the_ledger(stack: Stack) -> None:
    """Large answers and a small one pipelined by a client that never reads, then
    resets: a later large answer is written after the connection was lost (its
    request was waiting for the earlier ones to drain) and must not stay counted, else the
    server would refuse large answers for good once such leftovers reach the cap."""
    event_id = await new_event(stack, 30_000)
    venue = f"/api/events/{event_id}/venue"
    request = f"GET {venue} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n"
    socks = []
    for n in range(20):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        sock.bind((f"127.0.30.{1 + n}", 0))
        sock.connect(("127.0.0.1", port_of(stack.core_url)))
        # More than the kernel's send buffer takes (it grows to 4 MiB): the later
        # answers wait for the first ones to drain.
        sock.sendall((request * 6 + "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n").encode())
        socks.append(sock)

    async def holding() -> bool:
        return await metric(stack.core_ops_url, "onsale_http_unsent_bytes") > 0
    assert await eventually(holding)
    for sock in socks:  # a reset: the server's writes fail, the connection is lost
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()

    async def nothing_left() -> bool:
        return await metric(stack.core_ops_url, "onsale_http_unsent_bytes") == 0
    assert await eventually(nothing_left)
    async with httpx.AsyncClient(timeout=30) as c:  # large answers are still served
        r = await c.get(stack.core_url + venue, headers={"Accept-Encoding": "identity"})
        assert r.status_code == 200


def test_a_client_that_shuts_its_sending_side_still_gets_the_whole_answer(
        stack: Stack) -> None:
    """``printf 'GET …' | nc``: the request, then end of file, then read everything."""
    event_id = asyncio.run(new_event(stack, 30_000))
    sock = socket.create_connection(("127.0.0.1", port_of(stack.core_url)), timeout=30)
    sock.sendall(f"GET /api/events/{event_id}/venue HTTP/1.1\r\nHost: x\r\n"
                 f"Accept-Encoding: identity\r\n\r\n".encode())
    sock.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        data = sock.recv(65536)
        if not data:
            break
        got += data
    sock.close()
    head, _, body = got.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    assert head.startswith(b"HTTP/1.1 200") and length > 500_000
    assert len(body) == length
