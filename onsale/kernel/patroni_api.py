"""Patroni's REST API, as onsale reads it (docs/operations.md#failover): a shard that is a
Patroni cluster lists its nodes' API addresses in the directory (``shards.patroni``);
``onsale shard list`` shows the members ``/cluster`` reports, and ``onsale shard
switchover`` asks the leader for a planned switchover. Blocking calls with a short
timeout (the CLI runs them in a thread)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def http_json(url: str, *, method: str = "GET", body: dict[str, Any] | None = None,
              timeout: float = 2.0) -> tuple[int, Any]:
    """(status, parsed body) of one request; (0, None) when nothing answers."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw, status = response.read(), response.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    except (OSError, TimeoutError):
        return 0, None
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def cluster(urls: Sequence[str]) -> dict[str, Any] | None:
    """``/cluster`` from the first node that answers; None when none does."""
    for url in urls:
        status, body = http_json(f"{url.rstrip('/')}/cluster")
        if status == 200 and isinstance(body, dict):
            return body
    return None


def members(doc: dict[str, Any] | None, pids: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """Each member: name, host, port, role, state, timeline and lag (bytes behind the
    leader; 0 for the leader), and the postmaster's process id when it runs on this
    machine (``pids``: port -> pid). Pure."""
    out = []
    for m in (doc or {}).get("members", []):
        port = int(m.get("port") or 0)
        lag = m.get("lag", 0 if m.get("role") == "leader" else None)
        out.append({"name": m.get("name"), "host": m.get("host"), "port": port,
                    "role": m.get("role"), "state": m.get("state"),
                    "timeline": m.get("timeline"),
                    "lag": lag if isinstance(lag, int) else None,
                    "pid": (pids or {}).get(port)})
    return out


def local_postmasters(proc: Path = Path("/proc")) -> dict[int, int]:
    """port -> pid of each postmaster Patroni started on this machine (it passes
    ``--port=N`` on the command line)."""
    found: dict[int, int] = {}
    try:
        entries = list(proc.iterdir())
    except OSError:
        return found
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not args or not os.path.basename(args[0].decode(errors="replace")) == "postgres":
            continue
        for arg in args:
            if arg.startswith(b"--port="):
                try:
                    found.setdefault(int(arg[7:]), int(entry.name))
                except ValueError:
                    pass
    return found


def leader_of(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    return next((m for m in (doc or {}).get("members", []) if m.get("role") == "leader"),
                None)


def switchover(urls: Sequence[str], candidate: str | None = None,
               timeout: float = 60.0) -> dict[str, Any]:
    """A planned switchover through the leader's API (Patroni picks the synchronous
    standby unless ``candidate`` names one). Raises RuntimeError with Patroni's answer
    when refused."""
    doc = cluster(urls)
    leader = leader_of(doc)
    if leader is None:
        raise RuntimeError("no leader answers: nothing to switch over from")
    body: dict[str, Any] = {"leader": leader["name"]}
    if candidate:
        body["candidate"] = candidate
    api = leader.get("api_url", "").rsplit("/", 1)[0] or urls[0]
    status, answer = http_json(f"{api.rstrip('/')}/switchover", method="POST", body=body,
                               timeout=timeout)
    if status != 200:
        raise RuntimeError(f"Patroni refused the switchover ({status}): {answer}")
    return {"from": leader["name"], "answer": answer}


def slot_patch(config: dict[str, Any], name: str, database: str) -> dict[str, Any] | None:
    """The ``PATCH /config`` that declares ``name`` a permanent logical slot (pgoutput, on
    ``database``) in a cluster's dynamic configuration; None when it already is. Patroni
    keeps a permanent slot on the leader and copies it to the standbys, so the change
    capture goes on from it after a failover (docs/seatmap.md#after-a-failover). Pure."""
    wanted = {"type": "logical", "database": database, "plugin": "pgoutput"}
    if (config.get("slots") or {}).get(name) == wanted:
        return None
    return {"slots": {name: wanted}}


def declare_slot(urls: Sequence[str], name: str, database: str) -> bool:
    """Declare the change capture's slot permanent through the first node that answers;
    False when it already was. Raises RuntimeError when no node takes it."""
    for url in urls:
        status, config = http_json(f"{url.rstrip('/')}/config")
        if status != 200 or not isinstance(config, dict):
            continue
        patch = slot_patch(config, name, database)
        if patch is None:
            return False
        status, answer = http_json(f"{url.rstrip('/')}/config", method="PATCH", body=patch)
        if status == 200:
            return True
        raise RuntimeError(f"Patroni refused the slot ({status}): {answer}")
    raise RuntimeError("no Patroni node answers: the change capture's slot is not declared")
