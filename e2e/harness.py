"""The end-to-end suite's harness (docs/qa.md): the onsale under test, either one real
``onsale dev`` started here (embedded PostgreSQL, Valkey and the payment provider
simulator, all started by onsale itself) or a deployment named by ``--base-url``, and
Debian's Chromium driven by Playwright. Missing prerequisites fail loudly."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM = os.environ.get("ONSALE_E2E_CHROMIUM", "/usr/bin/chromium")
START_TIMEOUT = 240.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def onsale_command() -> list[str]:
    script = Path(sys.executable).with_name("onsale")
    if not script.exists():
        raise RuntimeError(f"the onsale command is not installed next to {sys.executable}; "
                           "run `make test` (it installs the package)")
    return [str(script)]


ADMIN_TOKEN_ENV = "ONSALE_E2E_ADMIN_TOKEN"  # the operator token of a remote onsale
DEMO_EVENT_ENV = "ONSALE_E2E_DEMO_EVENT"    # its 50,000-seat event (else one is made)


@dataclass
class Onsale:
    """The onsale under test and the operator's view of it. ``process`` and ``data_dir``
    are set only for the ``onsale dev`` this harness started (a local stack)."""

    base_url: str
    admin_token: str
    demo_event_id: int
    process: subprocess.Popen[str] | None = None
    data_dir: Path | None = None
    log: list[str] = field(default_factory=list)
    # "__Host-onsale_session" where the cookies are Secure (https), as sign-up set it
    cookie_name: str = "onsale_session"

    @property
    def local(self) -> bool:
        return self.process is not None

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=30)

    def admin(self, method: str, path: str, body: Any = None) -> httpx.Response:
        with self.http() as c:
            return c.request(method, path, json=body,
                             headers={"Authorization": f"Bearer {self.admin_token}",
                                      "Idempotency-Key": uuid.uuid4().hex})

    def create_event(self, **body: Any) -> int:
        """An event through the operator API (passthrough queue unless told)."""
        body.setdefault("name", f"E2E night {uuid.uuid4().hex[:6]}")
        body.setdefault("seats", 300)
        body.setdefault("queue_policy", "passthrough")
        r = self.admin("POST", "/api/ops/events", body)
        if r.status_code != 201:
            raise AssertionError(f"creating an event failed: {r.status_code} {r.text}")
        return int(r.json()["event_id"])

    def new_account(self) -> tuple[str, str, str]:
        """(email, password, session cookie value) of a new account, made through the API."""
        email = f"e2e-{uuid.uuid4().hex[:10]}@example.com"
        password = "correct horse battery"
        with self.http() as c:
            # A 503 says "retry after Retry-After" (docs/security.md): while a big event is
            # being created, Valkey can be slower than the request path waits for.
            for _ in range(20):
                r = c.post("/api/accounts", json={"email": email, "password": password})
                if r.status_code != 503:
                    break
                time.sleep(float(r.headers.get("retry-after", "1")))
            if r.status_code != 201:
                raise AssertionError(f"sign-up failed: {r.status_code} {r.text}")
            for name in ("onsale_session", "__Host-onsale_session"):
                cookie = c.cookies.get(name)
                if cookie:
                    self.cookie_name = name
                    break
        assert cookie, "sign-up set no session cookie"
        return email, password, cookie


def start_onsale(seats: int = 50_000) -> Onsale:
    """Start ``onsale dev`` on a free port in a throwaway data directory."""
    data = Path(tempfile.mkdtemp(prefix="onsale-e2e-"))
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL") and not k.startswith(
               ("ONSALE_PSP_", "ONSALE_STRIPE_"))}
    env["ONSALE_DATA_DIR"] = str(data)
    env["PYTHONUNBUFFERED"] = "1"
    env["ONSALE_OPS_PORT"] = str(free_port())  # /metrics and /readyz: its ops listener
    # Every browser and API client of the suite signs up from 127.0.0.1; the
    # per-address sign-in limit is tested in tests/integration/test_accounts.py.
    env["ONSALE_SIGNIN_LIMIT_IP"] = "1000000"
    ARTIFACTS.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [*onsale_command(), "dev", "--port", str(port), "--seats", str(seats)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    log: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert process.stdout is not None
        with (ARTIFACTS / "onsale-dev.log").open("w") as out:
            for line in process.stdout:
                log.append(line)
                out.write(line)
                out.flush()
                if "serving on" in line:
                    ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(START_TIMEOUT) or process.poll() is not None:
        process.kill()
        raise RuntimeError("onsale dev did not start:\n" + "".join(log[-40:]))
    text = "".join(log)
    found = re.search(r"demo event (\d+)", text)
    if found is None:
        raise RuntimeError("onsale dev printed no demo event:\n" + text)
    secrets = json.loads((data / "secrets.json").read_text())
    return Onsale(base_url=f"http://127.0.0.1:{port}", admin_token=secrets["ONSALE_ADMIN_TOKEN"],
                  data_dir=data, process=process, demo_event_id=int(found.group(1)), log=log)


def remote_onsale(base_url: str, env: dict[str, str] | None = None) -> Onsale:
    """A deployed onsale at ``base_url``: its operator token from ONSALE_E2E_ADMIN_TOKEN
    (required), its 50,000-seat event from ONSALE_E2E_DEMO_EVENT, or one made now."""
    env = dict(os.environ) if env is None else env
    token = env.get(ADMIN_TOKEN_ENV)
    if not token:
        raise RuntimeError(f"--base-url {base_url}: set {ADMIN_TOKEN_ENV} to the operator "
                           "token of that onsale (docs/qa.md)")
    with httpx.Client(base_url=base_url, timeout=30) as c:
        try:
            c.get("/api/events").raise_for_status()
        except httpx.HTTPError as exc:
            raise RuntimeError(f"--base-url {base_url} does not answer as onsale: {exc}") from exc
    onsale = Onsale(base_url=base_url.rstrip("/"), admin_token=token, demo_event_id=0)
    demo = env.get(DEMO_EVENT_ENV)
    onsale.demo_event_id = int(demo) if demo else onsale.create_event(
        name=f"E2E demo {uuid.uuid4().hex[:6]}", seats=50_000, queue_policy="fifo")
    return onsale


def stop_onsale(onsale: Onsale) -> None:
    """Ctrl-C, as a developer would: onsale stops its embedded servers itself."""
    if onsale.process is None or onsale.data_dir is None:
        return  # a remote onsale: not ours to stop
    if onsale.process.poll() is None:
        onsale.process.send_signal(signal.SIGINT)
        try:
            onsale.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(onsale.process.pid, signal.SIGKILL)
            onsale.process.wait(10)
    stop_leftovers(onsale.data_dir)
    shutil.rmtree(onsale.data_dir, ignore_errors=True)


def stop_leftovers(data_dir: Path) -> list[int]:
    """Kill any embedded server onsale dev left running in ``data_dir``: Valkey and
    PostgreSQL run in sessions of their own (a terminal's Ctrl-C reaches onsale dev
    only), so an onsale dev killed before it stopped them leaves them behind (seen once:
    a Valkey outlived the suite). Their pid files name them; returns the pids killed."""
    killed = []
    for pid_file in (*data_dir.rglob("valkey.pid"), *data_dir.rglob("postmaster.pid")):
        try:
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue
        killed.append(pid)
    return killed


def require_chromium() -> str:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        raise RuntimeError(
            f"Chromium is missing at {CHROMIUM}: the end-to-end suite needs it "
            "(apt-get install -y chromium, or set ONSALE_E2E_CHROMIUM). .ci/run installs it.")
    return CHROMIUM


FFMPEG = os.environ.get("ONSALE_E2E_FFMPEG", "/usr/bin/ffmpeg")
# Where Playwright looks for its browsers and its ffmpeg (PLAYWRIGHT_BROWSERS_PATH); the
# suite's browser is Debian's Chromium by path, so this folder holds only the ffmpeg.
PLAYWRIGHT_HOME = Path(__file__).resolve().parent / ".playwright"


def use_debian_ffmpeg() -> None:
    """Record videos with Debian's ffmpeg: Playwright's own build (``playwright install
    ffmpeg``) cannot be downloaded here, and it only needs an ffmpeg with VP8, which
    Debian's has. Playwright finds it as ``ffmpeg-<revision>/ffmpeg-linux`` under
    ``PLAYWRIGHT_BROWSERS_PATH``; this links that name to Debian's binary."""
    if not (os.path.isfile(FFMPEG) and os.access(FFMPEG, os.X_OK)):
        raise RuntimeError(
            f"ffmpeg is missing at {FFMPEG}: the end-to-end suite records a video of a "
            "failed test (apt-get install -y ffmpeg, or set ONSALE_E2E_FFMPEG). "
            ".ci/run installs it.")
    import playwright
    browsers = json.loads((Path(playwright.__file__).parent / "driver" / "package"
                           / "browsers.json").read_text())
    revision = next(b["revision"] for b in browsers["browsers"] if b["name"] == "ffmpeg")
    link = PLAYWRIGHT_HOME / f"ffmpeg-{revision}" / "ffmpeg-linux"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink() or os.readlink(link) != FFMPEG:
        link.unlink(missing_ok=True)
        link.symlink_to(FFMPEG)
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(PLAYWRIGHT_HOME)


def wait_for(check: Any, within: float = 10.0, every: float = 0.1) -> Any:
    deadline = time.monotonic() + within
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)
