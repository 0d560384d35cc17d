"""Talking to Valkey/Redis the same way whether ``REDIS_URL`` names one server or a
Valkey Cluster (docs/scaling.md#valkey-cluster).

- **The URL.** ``redis://`` / ``rediss://`` / ``unix://`` name one server, as
  redis-py reads them. ``redis+cluster://[user:password@]host:port[,host:port…]``
  (``rediss+cluster://`` with TLS) names a cluster: every ``host:port`` is a startup
  node, and the clients are redis-py's cluster clients (``kernel.dependency``).
- **The client type.** :data:`RedisClient` is either client: the tiers take it and use
  only what both do the same.
- **Hash tags.** Every key of one event starts with :func:`event_prefix`
  (``onsale:{e42}:``), so one event's queue, sessions, revocations, proofs of work and
  seat-map stream sit in one cluster slot and every script touches one slot. Keys that
  are not an event's (sign-in sessions, throttles, the outbox stream, health) are
  spread by their own keys or stand alone.
- **Scripts in one round trip** (:func:`run_scripts`): a pipeline of ``EVALSHA``, which
  a cluster pipeline sends to each script's node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

RedisClient: TypeAlias = Redis | RedisCluster
# A script, its keys and its arguments (run_scripts).
ScriptCall: TypeAlias = tuple[AsyncScript, Sequence[Any], Sequence[Any]]

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def event_prefix(event_id: int) -> str:
    """The start of every Valkey key of one event: its hash tag is ``{e<id>}``."""
    return f"onsale:{{e{event_id}}}:"


@dataclass(frozen=True)
class ClusterUrl:
    """A cluster URL taken apart: ``url`` is the first node's plain URL (credentials and
    options included) for redis-py's ``RedisCluster.from_url``; ``nodes`` every startup
    node, the first one included."""

    url: str
    nodes: tuple[tuple[str, int], ...]


def cluster_url(url: str) -> ClusterUrl | None:
    """The cluster a ``redis+cluster://`` URL names; None for any other URL (one
    server). Raises ``ValueError`` with a one-line reason for a malformed one."""
    scheme, sep, rest = url.partition("://")
    plain_scheme = CLUSTER_SCHEMES.get(scheme.lower())
    if not sep or plain_scheme is None:
        return None
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, tail = rest[:cut], rest[cut:]
    path = tail.split("?", 1)[0]
    if path not in ("", "/", "/0"):
        raise ValueError(f"a cluster has only database 0, got {path!r}")
    credentials, at, hosts = netloc.rpartition("@")
    nodes = tuple(_node(part) for part in hosts.split(","))
    first = hosts.split(",")[0]
    return ClusterUrl(f"{plain_scheme}://{credentials}{at}{first}{tail}", nodes)


def _node(text: str) -> tuple[str, int]:
    host, colon, port = text.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"each cluster node is host:port, got {text!r}")
    return host, int(port)


def is_cluster(client: RedisClient) -> bool:
    return isinstance(client, RedisCluster)


async def run_scripts(redis: RedisClient, calls: Sequence[ScriptCall], *,
                      raise_on_error: bool = True) -> list[Any]:
    """Several scripts in one round trip: a pipeline of EVALSHA (on a cluster, one per
    node; each script's keys must share a slot). redis-py's own script pipelining asks
    SCRIPT EXISTS first, a second round trip on every call, and its cluster pipeline
    refuses ``evalsha``; here the command is sent as such, and only the scripts Valkey
    says it lost (after a restart or a failover) are loaded (on every primary of a
    cluster) and run again: a script that ran is never run twice.
    ``raise_on_error=False``: error replies come back in the list, in order."""
    results: list[Any] = [None] * len(calls)
    todo = list(range(len(calls)))
    for _ in range(2):
        async with redis.pipeline(transaction=False) as pipe:
            for i in todo:
                script, keys, args = calls[i]
                pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            replies = await pipe.execute(raise_on_error=False)
        for i, reply in zip(todo, replies, strict=True):
            results[i] = reply
        todo = [i for i in todo if isinstance(results[i], NoScriptError)]
        if not todo:
            break
        for script in {calls[i][0].sha: calls[i][0] for i in todo}.values():
            await redis.script_load(script.script)
    if raise_on_error:
        for result in results:
            if isinstance(result, Exception):
                raise result
    return results
