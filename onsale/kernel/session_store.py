"""Session records in Valkey/Redis: the authority on which sessions exist.

Layout (every key of one account shares the hash tag ``{a<account>}``, so the
per-account operations touch one Valkey Cluster slot):

- ``onsale:{a<account>}:s:<session id>``: one string per session, the creation
  time in unix milliseconds, with a TTL of the session's max age. The session
  is valid exactly while this key exists;
- ``onsale:{a<account>}:sessions``: the account's index, a sorted set of its
  session ids scored by expiry (unix ms), so "sign out everywhere" can find
  them. Expired members are pruned whenever a session is created; the set
  expires with the newest session.

Every script names all the keys it touches in KEYS (no key is built inside a
script), as Valkey Cluster requires.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Protocol

from onsale.kernel.valkey import RedisClient
from onsale.kernel.valkey import run_scripts as run_scripts  # core's sign-in throttle uses it

# KEYS: record, index. ARGV: session id, now (ms), ttl (ms).
CREATE_LUA = """
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
redis.call('ZADD', KEYS[2], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
return 1
"""

# KEYS: record, index. ARGV: session id.
REVOKE_LUA = """
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
"""

# KEYS: index, then the record of every member of the index as read just
# before. ARGV: those members' ids, in the same order. Refuses (returns -1)
# when the index gained a member meanwhile: the caller reads it again.
REVOKE_ALL_LUA = """
local listed = {}
for i = 1, #ARGV do listed[ARGV[i]] = true end
for _, sid in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if not listed[sid] then return -1 end
end
local n = 0
for i = 2, #KEYS do n = n + redis.call('DEL', KEYS[i]) end
redis.call('DEL', KEYS[1])
return n
"""

# The detail of every 503 session_unavailable: a sentence, never an exception name.
SESSIONS_DOWN = "Sessions cannot be checked right now; retry shortly."


def tag(account: uuid.UUID) -> str:
    return f"onsale:{{a{account}}}:"


def record_key(account: uuid.UUID, session_id: str) -> str:
    return f"{tag(account)}s:{session_id}"


def index_key(account: uuid.UUID) -> str:
    return f"{tag(account)}sessions"


def create_args(account: uuid.UUID, session_id: str, max_age: int,
                now_ms: int | None = None) -> tuple[list[str], list[Any]]:
    """KEYS and ARGV of ``CREATE_LUA`` (also used by the tests' sync helper)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    return ([record_key(account, session_id), index_key(account)],
            [session_id, now_ms, max_age * 1000])


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Store(Protocol):
    """What ``kernel.sessions.Sessions`` needs of a store (tests use a dict)."""

    async def create(self, account: uuid.UUID, session_id: str, max_age: int, *,
                     replaces: tuple[uuid.UUID, str] | None = None) -> None: ...

    async def exists(self, account: uuid.UUID, session_id: str) -> bool: ...

    async def exist(self, refs: list[tuple[uuid.UUID, str]]) -> list[bool]: ...

    async def revoke(self, account: uuid.UUID, session_id: str) -> bool: ...

    async def revoke_all(self, account: uuid.UUID) -> list[str]: ...


class SessionStore:
    """A thin adapter: the commands and scripts above, nothing decided here."""

    def __init__(self, redis: RedisClient) -> None:
        self.redis = redis
        self._create = redis.register_script(CREATE_LUA)
        self._revoke = redis.register_script(REVOKE_LUA)
        self._revoke_all = redis.register_script(REVOKE_ALL_LUA)

    async def create(self, account: uuid.UUID, session_id: str, max_age: int, *,
                     replaces: tuple[uuid.UUID, str] | None = None) -> None:
        """Write a session record; ``replaces`` (the session this browser had)
        is revoked in the same round trip."""
        keys, args = create_args(account, session_id, max_age)
        if replaces is None:
            await self._create(keys=keys, args=args)
            return
        old_account, old_id = replaces
        await run_scripts(self.redis, [
            (self._create, keys, args),
            (self._revoke, [record_key(old_account, old_id), index_key(old_account)], [old_id]),
        ])

    async def exists(self, account: uuid.UUID, session_id: str) -> bool:
        return bool(await self.redis.exists(record_key(account, session_id)))

    async def exist(self, refs: list[tuple[uuid.UUID, str]]) -> list[bool]:
        """``exists`` for many (account, session id) pairs in one pipeline."""
        if not refs:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for account, session_id in refs:
                pipe.exists(record_key(account, session_id))
            return [bool(n) for n in await pipe.execute()]

    async def revoke(self, account: uuid.UUID, session_id: str) -> bool:
        """Whether a record was there to delete."""
        deleted = await self._revoke(keys=[record_key(account, session_id),
                                           index_key(account)], args=[session_id])
        return bool(deleted)

    async def revoke_all(self, account: uuid.UUID, attempts: int = 5) -> list[str]:
        """Delete every session of the account; the ids that were listed."""
        for _ in range(attempts):
            members = [_s(m) for m in await self.redis.zrange(index_key(account), 0, -1)]
            keys = [index_key(account), *(record_key(account, m) for m in members)]
            if await self._revoke_all(keys=keys, args=members) != -1:
                return members
        raise RuntimeError("the account's sessions kept changing; sign-out everywhere gave up")
