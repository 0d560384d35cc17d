"""Sessions for tests that shop as an account without signing in through the
API (password hashing and throttling are tested on their own):

- ``mint_cookie``: a real session record written to the deployment's Valkey
  (synchronously, so that sync helpers such as ``Api.client`` can use it) and
  the signed cookie value that goes with it;
- ``MemorySessionStore``: an in-process stand-in for ``kernel.session_store``
  for unit tests without servers (``down`` makes it fail like an outage).
"""

from __future__ import annotations

import functools
import uuid

import redis
from redis.cluster import ClusterNode, RedisCluster

from onsale.kernel.config import Settings
from onsale.kernel.session_store import CREATE_LUA, create_args
from onsale.kernel.sessions import SessionCodec, SessionRef, new_session_id
from onsale.kernel.valkey import cluster_url


def mint_cookie(settings: Settings, account: uuid.UUID) -> str:
    """The cookie value of a new live session of ``account``. Without
    REDIS_URL no record can be written: the cookie is signed but will be
    answered 503 session_unavailable, as any cookie would be."""
    ref = SessionRef(account, new_session_id())
    if settings.redis_url is not None:
        keys, args = create_args(account, ref.session_id, settings.session_max_age)
        _client(settings.redis_url).eval(CREATE_LUA, len(keys), *keys, *args)
    return SessionCodec(settings.secret_key, settings.session_max_age).encode(ref)


@functools.cache
def _client(url: str) -> redis.Redis | RedisCluster:
    """One connection per Valkey for the whole run: a mint is then one short
    command, not a connection (they block the event loop of the test). A cluster
    URL (``redis+cluster://``): redis-py's cluster client, one connection per node."""
    cluster = cluster_url(url)
    if cluster is not None:
        return RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.nodes])
    return redis.Redis.from_url(url, single_connection_client=True)


class MemorySessionStore:
    """The ``kernel.session_store.SessionStore`` interface, in a dict."""

    def __init__(self) -> None:
        self.records: dict[uuid.UUID, set[str]] = {}
        self.down = False
        self.reads = 0

    def _up(self) -> None:
        if self.down:
            raise ConnectionError("the session store is down (test)")

    async def create(self, account: uuid.UUID, session_id: str, max_age: int, *,
                     replaces: tuple[uuid.UUID, str] | None = None) -> None:
        self._up()
        self.records.setdefault(account, set()).add(session_id)
        if replaces is not None:
            self.records.get(replaces[0], set()).discard(replaces[1])

    async def exists(self, account: uuid.UUID, session_id: str) -> bool:
        self._up()
        self.reads += 1
        return session_id in self.records.get(account, set())

    async def exist(self, refs: list[tuple[uuid.UUID, str]]) -> list[bool]:
        self._up()
        self.reads += 1  # one pipeline
        return [s in self.records.get(a, set()) for a, s in refs]

    async def revoke(self, account: uuid.UUID, session_id: str) -> bool:
        self._up()
        found = session_id in self.records.get(account, set())
        self.records.get(account, set()).discard(session_id)
        return found

    async def revoke_all(self, account: uuid.UUID) -> list[str]:
        self._up()
        return sorted(self.records.pop(account, set()))
