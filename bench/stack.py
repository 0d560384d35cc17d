"""Throwaway onsale stacks for the benchmarks, and what a bench needs from a server.

- ``start_dev``: ``onsale dev`` in a fresh temporary data directory on a free port (its
  own embedded PostgreSQL with default durability, Valkey and the provider simulator),
  with the settings a bench needs (``BENCH_LIMITS``: one address signs up and joins
  hundreds of shoppers);
- ``start_role``: one ``onsale serve --role ...`` process, ready when its /healthz answers;
- ``run_audit``: ``onsale audit`` against a database: every bench that writes holds or
  orders ends with it;
- ``refused``: the error a bench stops with when an external server throttles it, naming
  the setting to raise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from onsale.embedded import free_port  # below the ephemeral range (see there)

ONSALE = str(Path(sys.executable).with_name("onsale"))
SECRET = "bench-secret-key-0123456789abcdef"
ADMIN = "bench-admin-token-0123456789"

# A bench signs up and joins all its shoppers from 127.0.0.1: the per-address
# throttles (docs/configuration.md, docs/security.md#sign-in-and-sign-up-throttling)
# would stop it after 60 sign-ups a minute and a burst of 100 joins.
BENCH_LIMITS = {
    "ONSALE_SIGNIN_LIMIT_IP": "100000",
    "ONSALE_JOIN_LIMIT_IP": "100000",
    "ONSALE_POLL_LIMIT_IP": "1000000",
}
# What each throttled route's 429 means for a bench, and the setting to raise.
THROTTLES = {
    "/api/accounts": "ONSALE_SIGNIN_LIMIT_IP (sign-ups per address per minute)",
    "/api/session": "ONSALE_SIGNIN_LIMIT_IP (sign-ins per address per minute)",
    "/queue": "ONSALE_JOIN_LIMIT_IP (joins per address per minute, per edge process)",
}


def refused(status: int, path: str, body: bytes) -> SystemExit:
    """The SystemExit for an unexpected answer during a bench's setup; a 429 names the
    setting the server must be started with."""
    try:
        code = json.loads(body).get("code", "")
    except ValueError:
        code = ""
    if status == 429:
        setting = next((v for k, v in THROTTLES.items() if k in path), "its rate limits")
        return SystemExit(
            f"{path} answered 429 {code or 'rate_limited'}: the server throttles this bench, "
            f"which sends everything from one address. Start it with {setting} raised, e.g.\n"
            + "  " + " ".join(f"{k}={v}" for k, v in BENCH_LIMITS.items())
            + " .venv/bin/onsale dev\n"
            "(or run the bench without --url: it starts its own server with them raised).")
    return SystemExit(f"{path} answered {status} {code}: {body[:300]!r}")


@dataclass
class DevServer:
    """One ``onsale dev`` process and its data directory."""

    process: subprocess.Popen[str]
    port: int
    admin_token: str
    data_dir: Path
    log: list[str] = field(default_factory=list)
    port_of: dict[int, int] = field(default_factory=dict)  # start_cores: pid -> port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def database_url(self) -> str:
        for line in self.log:  # onsale dev --ha prints HAProxy's address
            if "DATABASE_URL=" in line:
                return line.rsplit("DATABASE_URL=", 1)[1].strip()
        return database_url(self.data_dir, from_env=False)

    def rss_mib(self) -> float:
        return rss_mib(self.process.pid)

    def redis_url(self) -> str:
        """Its embedded Valkey: the child of ``onsale dev`` whose process title is
        ``valkey-server 127.0.0.1:<port>``."""
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_bytes()
                title = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            words = title.decode(errors="replace").split()
            if (int(stat.rsplit(b")", 1)[1].split()[1]) == self.process.pid and words
                    and words[0].endswith("valkey-server") and len(words) > 1
                    and words[1].rpartition(":")[2].isdigit()):
                return f"redis://127.0.0.1:{int(words[1].rpartition(':')[2])}/0"
        raise SystemExit("the Valkey of onsale dev was not found among its children")

    def start_cores(self, count: int) -> list[subprocess.Popen[bytes]]:
        """``count`` more ``onsale serve --role core`` processes on free ports (in
        ``.port_of``) against this server's PostgreSQL and Valkey, with its secrets:
        they answer the same sessions and admission tokens."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ONSALE_PSP_", "ONSALE_STRIPE_"))}
        env.update({"DATABASE_URL": self.database_url(), "REDIS_URL": self.redis_url(),
                    "ONSALE_SECRET_KEY": SECRET, "ONSALE_ADMIN_TOKEN": self.admin_token,
                    **BENCH_LIMITS})
        procs = []
        for i in range(count):
            port = free_port()
            proc = start_role("core", env, port, self.data_dir / f"core{i + 1}.log")
            self.port_of[proc.pid] = port
            procs.append(proc)
        return procs

    def stop(self, *, remove: bool = False) -> None:
        """Stop it; ``remove``: its data directory too (else it is kept, and named)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # dev stops its embedded servers
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        tidy(self.data_dir, remove)


def tidy(directory: Path, remove: bool) -> None:
    """A bench's temporary directory (databases, logs) once its servers are stopped:
    removed after a clean run, kept after a failure so it can be looked into."""
    if remove:
        shutil.rmtree(directory, ignore_errors=True)
    elif directory.exists():
        print(f"kept {directory} (databases and logs of this run)", file=sys.stderr)


def start_dev(*, seats: int = 50_000, env: dict[str, str] | None = None,
              prefix: str = "onsale-bench-", shards: int = 1, ha: bool = False) -> DevServer:
    """``onsale dev`` on a free port in a new temporary data directory; ``env`` is added
    to the environment (``BENCH_LIMITS`` for the benches that sign up many shoppers).
    ``seats``: the demo event it seeds. ``shards`` > 1: ``onsale dev --shards N``, the
    directory (shard 1, ``pg/``) and N-1 more servers (``pg-shard<n>/``). ``ha``:
    ``onsale dev --ha``."""
    data = Path(tempfile.mkdtemp(prefix=prefix))
    port = free_port()
    full = {k: v for k, v in os.environ.items()
            if k not in ("DATABASE_URL", "REDIS_URL")
            and not k.startswith(("ONSALE_PSP_", "ONSALE_STRIPE_"))}
    full.update({"ONSALE_DATA_DIR": str(data), "PYTHONUNBUFFERED": "1",
                 "ONSALE_SECRET_KEY": SECRET, "ONSALE_ADMIN_TOKEN": ADMIN, **(env or {})})
    OPS_PORTS[port] = free_port()
    full["ONSALE_OPS_PORT"] = str(OPS_PORTS[port])
    command = [ONSALE, "dev", "--port", str(port), "--seats", str(seats)]
    if shards > 1:
        command += ["--shards", str(shards)]
    if ha:  # each shard a Patroni cluster of three nodes behind HAProxy
        command += ["--ha"]
    process = subprocess.Popen(command, env=full, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    log: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            log.append(line)
            if "serving on" in line:
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(300) or process.poll() is not None:
        server = DevServer(process, port, ADMIN, data, log)
        server.stop()
        raise SystemExit("onsale dev did not start:\n" + "".join(log[-30:]))
    return DevServer(process, port, ADMIN, data, log)


def database_url(data_dir: Path, *, from_env: bool = True) -> str:
    """DATABASE_URL (unless ``from_env`` is False), else the embedded cluster of an
    ``onsale dev`` data directory (over TCP, as psql and pgbench reach it)."""
    url = os.environ.get("DATABASE_URL") if from_env else None
    if url:
        return url
    pid_file = data_dir / "pg" / "postmaster.pid"
    if not pid_file.exists():
        raise SystemExit(f"no running PostgreSQL in {data_dir / 'pg'}: set DATABASE_URL or "
                         "--data-dir to the server's")
    lines = pid_file.read_text().splitlines()
    return f"postgresql://postgres@127.0.0.1:{int(lines[3])}/postgres"


OPS_PORTS: dict[int, int] = {}  # public port -> its ops listener's, for processes started here


def ops_port(port: int) -> int:
    """The ops listener (/metrics, /healthz) of the process serving ``port``: the port a
    bench gave it, else onsale's default, the public port + 1000."""
    return OPS_PORTS.get(port, port + 1000)


def start_role(role: str, env: dict[str, str], port: int,
               log: Path) -> subprocess.Popen[bytes]:
    """``onsale serve --role <role>`` on ``port``, its ops listener on another free port,
    output to ``log``; returns once its /healthz answers (exits with the log's tail if
    it does not)."""
    OPS_PORTS[port] = free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen([ONSALE, "serve", "--role", role, "--host", "127.0.0.1",
                                 "--port", str(port)],
                                env={**env, "ONSALE_OPS_PORT": str(OPS_PORTS[port])},
                                stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the {role} process exited ({proc.returncode}):\n"
                             + log.read_text()[-2000:])
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ops_port(port)}/healthz",
                                        timeout=1):
                return proc
        except urllib.error.HTTPError:  # answering, e.g. 503 while it warms up
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"the {role} process did not answer /healthz within 60 s; see {log}")


# Every pgbench ceiling's shoppers: up to 300 existing accounts, numbered from 1 with an
# index, so a script's ``(SELECT account_id FROM bench.accounts WHERE n = :a)`` costs a
# lookup, not a scan.
PGBENCH_ACCOUNTS = """
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS bench;
DROP TABLE IF EXISTS bench.accounts;
CREATE TABLE bench.accounts AS
SELECT row_number() OVER () AS n, account_id FROM accounts LIMIT 300;
ALTER TABLE bench.accounts ADD PRIMARY KEY (n);
"""


def run_pgbench(url: str, setup: str, script: str, *, clients: int,
                duration: float) -> tuple[float, list[str]]:
    """A bench's SQL ceiling: ``setup`` (after schema ``bench`` and ``PGBENCH_ACCOUNTS``),
    then ``script`` (``{accounts}`` in it is their count) under pgbench for ``duration``
    seconds with ``-M prepared`` (each statement planned once per connection, as core's
    asyncpg statements are). Returns the transactions/s and pgbench's summary lines;
    the schema is dropped after."""
    from onsale.embedded import _pg_bin

    psql = str(_pg_bin() / "psql")
    subprocess.run([psql, url, "-q", "-c", PGBENCH_ACCOUNTS + setup], check=True)
    accounts = int(subprocess.run([psql, url, "-At", "-c", "SELECT count(*) FROM bench.accounts"],
                                  check=True, capture_output=True, text=True).stdout)
    with tempfile.TemporaryDirectory(prefix="onsale-pgbench-") as where:
        path = Path(where) / "script.sql"
        path.write_text(script.replace("{accounts}", str(accounts)))
        out = subprocess.run(
            [str(_pg_bin() / "pgbench"), "-n", "-M", "prepared", "-c", str(clients), "-j", "2",
             "-T", str(max(1, int(duration))), "-f", str(path), url],
            check=False, capture_output=True, text=True)
    subprocess.run([psql, url, "-q", "-c",
                    "SET client_min_messages = warning; DROP SCHEMA bench CASCADE"], check=True)
    if out.returncode != 0:
        raise SystemExit(f"pgbench failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    lines = [line for line in out.stdout.splitlines()
             if line.startswith(("number of transactions", "latency", "tps"))]
    tps = next((float(line.split()[2]) for line in lines if line.startswith("tps = ")),
               float("nan"))
    return tps, lines


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.terminate()
    for proc in reversed(procs):
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_audit(db_url: str, bench: str) -> int:
    """``onsale audit`` against ``db_url``: prints its report and a figure line, returns the
    number of violations (0 or 1 for "some": the CLI exits 1 on any). Exits if the audit
    itself could not run (exit 2)."""
    from bench.figures import figure

    env = {**os.environ, "DATABASE_URL": db_url}
    result = subprocess.run([ONSALE, "audit"], env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode not in (0, 1):
        raise SystemExit(f"onsale audit could not run the checks (exit {result.returncode})")
    count = 0
    for line in result.stdout.splitlines():
        if line.startswith("audit: ") and "violation(s)" in line:
            count = int(line.split()[1])
    if result.returncode == 1 and count == 0:
        count = 1
    figure(f"{bench}.violations", count, "count")
    return count
