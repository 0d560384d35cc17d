"""A real onsale stack for payment tests: the provider simulator and core as
separate processes talking HTTP (webhooks included), on one test database.

Core can be started with a crash point (ONSALE_CRASH_AT) and killed or
restarted; the simulator keeps its state in its own data directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from onsale.core.metrics import Metrics
from onsale.core.payments import Payments
from onsale.core.tier import build_payments
from onsale.embedded import EmbeddedValkey, free_port, start_valkey
from onsale.kernel.db import Database, create_pool
from onsale.kernel.sessions import COOKIE
from tests.conftest import ADMIN_TOKEN, SECRET, Admissions, Admit, fresh_database, make_settings
from tests.sessions_support import mint_cookie

ONSALE = str(Path(sys.executable).parent / "onsale")
PSP_KEY = "sk_test_onsale_0123456789abcdef"
PSP_SIM_KEY = "sim_test_onsale_0123456789abcdef"
PSP_PUBLISHABLE = "pk_test_onsale_0123456789abcdef"
WEBHOOK_SECRET = "whsec_onsale_0123456789abcdef"
# Stripe's test PaymentMethods (the simulator knows them): what a page or API client
# sends once the card is tokenized.
APPROVE = "pm_card_visa"
DECLINE = "pm_card_chargeDeclined"
INSUFFICIENT = "pm_card_visa_chargeDeclinedInsufficientFunds"
THREE_DS = "pm_card_threeDSecure2Required"


class Process:
    """A child process whose output is collected; ready when a line appears."""

    def __init__(self, args: list[str], env: dict[str, str], ready: str, name: str) -> None:
        self.name = name
        self.output: list[str] = []
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self._ready = threading.Event()
        threading.Thread(target=self._pump, args=(ready,), daemon=True).start()
        if not self._ready.wait(60) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError(f"{name} did not start:\n" + "".join(self.output))

    def _pump(self, ready: str) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            if ready in line:
                self._ready.set()

    def kill9(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.wait(30)

    def wait_exit(self, timeout: float = 60) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(15)


class Stack:
    def __init__(self, db_url: str, data_dir: Path, *, grace_seconds: int = 600,
                 auth_window_seconds: int = 3600, redis_url: str | None = None) -> None:
        self.db_url = db_url
        self.data_dir = data_dir
        # Core checks admissions against the waiting room's Redis; an edge
        # process serves the queue the test clients join (tests/conftest.py Admit).
        self.redis_url = redis_url
        self.valkey: EmbeddedValkey | None = None
        self.edge: Process | None = None
        self.edge_url = f"http://127.0.0.1:{free_port()}"
        self.admissions = Admissions(self.join)
        self.core_port = free_port()
        self.psp_port = free_port()
        self.core_url = f"http://127.0.0.1:{self.core_port}"
        self.psp_url = f"http://127.0.0.1:{self.psp_port}"
        self.grace_seconds = grace_seconds
        self.auth_window_seconds = auth_window_seconds
        self.core: Process | None = None
        self.core_ops_url = ""
        self.worker: Process | None = None
        self.psp: Process | None = None

    def core_env(self, **extra: str) -> dict[str, str]:
        env = {
            **os.environ, "DATABASE_URL": self.db_url, "ONSALE_SECRET_KEY": SECRET,
            "ONSALE_ADMIN_TOKEN": ADMIN_TOKEN, "ONSALE_STRIPE_API_BASE": self.psp_url,
            "ONSALE_STRIPE_SECRET_KEY": PSP_KEY, "ONSALE_STRIPE_PUBLISHABLE_KEY": PSP_PUBLISHABLE,
            "ONSALE_STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET, "ONSALE_STRIPE_TIMEOUT": "2",
            "ONSALE_CHECKOUT_MIN_REMAINING_SECONDS": "0",
            "ONSALE_PAYMENT_GRACE_SECONDS": str(self.grace_seconds),
            "ONSALE_PAYMENT_FIRST_CHECK_SECONDS": "0", "ONSALE_PAYMENT_RETRY_SECONDS": "1",
            "ONSALE_RECONCILE_INTERVAL": "0.2", "ONSALE_PUBLIC_URL": self.core_url,
            "ONSALE_DB_POOL_MAX": "10", "REDIS_URL": self.ensure_redis(),
            "ONSALE_JOIN_LIMIT_IP": "1000000", "ONSALE_POLL_LIMIT_IP": "1000000",
            "ONSALE_ALLOW_SIMULATOR": "true",  # these tests pay the simulator
            "ONSALE_OPS_PORT": str(free_port()),  # each process its own (ops_listener.py)
        }

        env.pop("ONSALE_CRASH_AT", None)
        env.update(extra)
        return env

    def start_psp(self) -> None:
        env = {**os.environ, "ONSALE_PSP_SECRET_KEY": PSP_KEY, "ONSALE_PSP_SIM_KEY": PSP_SIM_KEY,
               "ONSALE_PSP_PUBLISHABLE_KEY": PSP_PUBLISHABLE,
               "ONSALE_PSP_WEBHOOK_URL": f"{self.core_url}/api/webhooks/payments",
               "ONSALE_PSP_WEBHOOK_SECRET": WEBHOOK_SECRET,
               "ONSALE_PSP_AUTH_WINDOW_SECONDS": str(self.auth_window_seconds),
               "ONSALE_PSP_PUBLIC_URL": self.psp_url}
        self.psp = Process([ONSALE, "psp", "--port", str(self.psp_port),
                            "--data-dir", str(self.data_dir / "psp")],
                           env, "serving on", "psp")

    def start_core(self, *, role: str = "core", crash_at: str | None = None,
                   **extra: str) -> Process:
        """Core serving HTTP; role 'dev-like' background work runs in a worker."""
        if crash_at:
            extra["ONSALE_CRASH_AT"] = crash_at
        if self.edge is None:
            self.start_edge()
        env = self.core_env(**extra)
        self.core_ops_url = f"http://127.0.0.1:{env['ONSALE_OPS_PORT']}"  # /metrics, /readyz
        self.core = Process([ONSALE, "serve", "--role", role, "--port", str(self.core_port)],
                            env, "serving on", "core")
        return self.core

    def ensure_redis(self) -> str:
        if self.redis_url is None:
            self.valkey = start_valkey(self.data_dir / "valkey", persist=False)
            self.redis_url = self.valkey.url
        return self.redis_url

    def start_edge(self) -> Process:
        port = self.edge_url.rsplit(":", 1)[1]
        self.edge = Process([ONSALE, "serve", "--role", "edge", "--port", port],
                            self.core_env(), "serving on", "edge")
        return self.edge

    def session_cookie(self, account_id: uuid.UUID) -> str:
        """A live session of the account in the stack's Valkey (the processes
        serve plain-http loopback, so the cookie is plain ``onsale_session``)."""
        return mint_cookie(make_settings(self.db_url, redis_url=self.ensure_redis()), account_id)

    async def join(self, account_id: uuid.UUID, event_id: int) -> httpx.Response:
        """Join the event's queue through the edge (passthrough events admit at once)."""
        async with httpx.AsyncClient(base_url=self.edge_url, timeout=30,
                                     cookies={COOKIE: self.session_cookie(account_id)}) as c:
            return await c.post(f"/api/events/{event_id}/queue")

    def start_worker(self, redis_url: str, *, crash_at: str | None = None) -> Process:
        """A worker: sweeper, reconciler, outbox relay and ticket consumer."""
        extra = {"REDIS_URL": redis_url}
        if crash_at:
            extra["ONSALE_CRASH_AT"] = crash_at
        self.worker = Process([ONSALE, "serve", "--role", "worker", "--port", str(free_port())],
                              self.core_env(**extra), "serving on", "worker")
        return self.worker

    def stop(self) -> None:
        for proc in (self.worker, self.core, self.edge, self.psp):
            if proc is not None:
                proc.stop()
                if any("Traceback" in line for line in proc.output):
                    print(f"--- {proc.name} output ---\n" + "".join(proc.output[-200:]))
        if self.valkey is not None:
            self.valkey.stop()

    def client(self, account_id: uuid.UUID | None = None) -> httpx.AsyncClient:
        cookies = {COOKIE: self.session_cookie(account_id)} if account_id else {}
        auth = Admit(self.admissions, account_id) if account_id else None
        return httpx.AsyncClient(base_url=self.core_url, cookies=cookies, timeout=30, auth=auth)

    def psp_client(self) -> httpx.AsyncClient:
        """For the simulator's /_sim/ endpoints (its fault-injection key)."""
        return httpx.AsyncClient(base_url=self.psp_url, timeout=30,
                                 headers={"Authorization": f"Bearer {PSP_SIM_KEY}"})

    async def set_faults(self, **faults: Any) -> None:
        async with self.psp_client() as c:
            r = await c.put("/_sim/faults", json=faults)
            assert r.status_code == 200, r.text

    async def clear_faults(self) -> None:
        async with self.psp_client() as c:
            r = await c.delete("/_sim/faults")
            assert r.status_code in (200, 204), r.text

    async def psp_stats(self) -> dict[str, Any]:
        async with self.psp_client() as c:
            r = await c.get("/_sim/stats")
            assert r.status_code == 200, r.text
            data: dict[str, Any] = r.json()
            return data


@contextlib.asynccontextmanager
async def payments_for(stack: Stack) -> AsyncIterator[Payments]:
    """The reconciler's side of the stack, driven step by step from a test."""
    settings = make_settings(
        stack.db_url, db_pool_max=4, stripe_api_base=stack.psp_url, stripe_secret_key=PSP_KEY,
        stripe_publishable_key=PSP_PUBLISHABLE, stripe_webhook_secret=WEBHOOK_SECRET,
        stripe_timeout=2.0, payment_retry_seconds=1,
        payment_grace_seconds=stack.grace_seconds)
    pool = await create_pool(settings)
    payments = build_payments(Database(pool, 2.0), settings, Metrics())
    assert payments is not None
    try:
        yield payments
    finally:
        await payments.drain()
        await payments.client.close()
        await pool.close()


@contextlib.asynccontextmanager
async def started_stack(pg: Any, template_db: str, data_dir: Path,
                        **options: Any) -> AsyncIterator[Stack]:
    """A fresh database with the provider simulator and a core process started
    (``options``: Stack's, e.g. ``auth_window_seconds``); stopped at the end."""
    stack = Stack(await fresh_database(pg, template_db), data_dir, **options)
    try:
        stack.start_psp()
        stack.start_core()
        yield stack
    finally:
        stack.stop()


@contextlib.asynccontextmanager
async def connected(stack: Stack) -> AsyncIterator[Any]:
    """A connection to the stack's database, set up as core's are."""
    import asyncpg

    from onsale.kernel.db import init_connection

    conn = await asyncpg.connect(stack.db_url)
    await init_connection(conn)
    try:
        yield conn
    finally:
        await conn.close()


async def eventually(check: Any, within: float = 30.0, interval: float = 0.1) -> Any:
    """Poll an async predicate until it returns something truthy (no timed asserts)."""
    import asyncio

    deadline = time.monotonic() + within
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {within}s; last value: {last!r}")
