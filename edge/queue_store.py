"""The waiting room in Redis: a thin adapter over the Lua scripts in
``queue_store.lua`` (atomic steps) and a few plain commands (reads, batches).

Nothing here decides policy; ``edge.admitter_step`` and ``edge.routes`` do.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from onsale.kernel.dependency import request_redis
from onsale.kernel.valkey import RedisClient, event_prefix

LUA_FILE = Path(__file__).with_suffix(".lua")
_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_FENCED = ("sweep", "admit", "close_draw", "assign_draw", "finish_draw", "merge_prequeue")
_SPENDING = ("join", "claim")  # they may spend a proof of work (the ``spend`` prelude)


@cache
def lua_sources() -> dict[str, str]:
    parts = _NAME.split(LUA_FILE.read_text())
    blocks = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts), 2)}
    fence, spend = blocks.pop("fence"), blocks.pop("spend")
    return {name: "\n".join([*([fence] if name in _FENCED else []),
                             *([spend] if name in _SPENDING else []), src])
            for name, src in blocks.items()}


class EventKeys:
    """The keys of one event, all in one Redis Cluster slot (hash tag {eN}, the one the
    event's seat map shares: ``kernel.valkey.event_prefix``)."""

    def __init__(self, event_id: int) -> None:
        p = event_prefix(event_id)
        self.seq, self.queue, self.pre, self.seen = p + "seq", p + "queue", p + "pre", p + "seen"
        self.pending, self.active, self.sess = p + "pending", p + "active", p + "sess"
        self.status, self.stats, self.joins = p + "status", p + "stats", p + "joins"
        self.lease, self.fence = p + "lease", p + "fence"
        self._prefix = p

    def spent(self, challenge_id: str) -> str:
        """A proof-of-work challenge used by a join (edge.pow: one join each)."""
        return f"{self._prefix}pow:{challenge_id}"


@dataclass(frozen=True)
class Joined:
    kind: str    # "placed" | "pre" | "replayed" (the proof of work was spent: no join)
    place: int   # 0 in the pre-queue


@dataclass(frozen=True)
class Spend:
    """A proof of work a join spends, atomically with it: its challenge's id and
    how long to remember it (``edge.pow.Work``, ``PowCodec.remember_ms``)."""

    challenge_id: str
    ttl_ms: int


def _spending(k: EventKeys, spend: Spend | None) -> tuple[list[str], list[Any]]:
    return ([], []) if spend is None else ([k.spent(spend.challenge_id)], [spend.ttl_ms])


@dataclass(frozen=True)
class Claimed:
    kind: str        # "same" (this device's session), "new", "elsewhere" (another
    session_id: str  # device has it and this one did not ask to enter), "gone",
    #                  "replayed" (the proof of work was spent: nothing claimed)


@dataclass(frozen=True)
class Admitted:
    serving: int
    abandoned: int
    accounts: list[str]


@dataclass(frozen=True)
class Swept:
    abandoned: int
    no_show: int
    expired: int
    active: int
    pending: int


# What a 503 says when Redis did not answer (a sentence, never an exception's name).
QUEUE_STORE_DOWN = "The waiting room store did not answer in time; keep your place and retry."
ADMISSION_STORE_DOWN = ("Admission could not be checked: the waiting room store did not "
                        "answer in time; retry shortly.")


class Fenced(Exception):
    """A newer admitter holds the lease: this one must stop."""


def connect(url: str, max_connections: int = 64, wait: float = 0.25) -> RedisClient:
    """A request-path client (kernel.dependency.request_redis): requests wait up to
    ``wait`` seconds for a free connection, a connect and an answer, then fail
    fast behind a circuit breaker. Apps use ``request_redis_for(settings)``."""
    return request_redis(url, timeout=wait, pool_wait=2 * wait, max_connections=max_connections)


def new_session_id() -> str:
    return secrets.token_urlsafe(12)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _decode(mapping: dict[Any, Any]) -> dict[str, str]:
    return {_s(k): _s(v) for k, v in mapping.items()}


class QueueStore:
    def __init__(self, redis: RedisClient) -> None:
        self.redis = redis
        self._scripts = {name: redis.register_script(src) for name, src in lua_sources().items()}

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        return await self._scripts[name](keys=keys, args=args)

    # --- visitors ----------------------------------------------------------------------

    async def join(self, event_id: int, account: uuid.UUID, policy: str, now_ms: int,
                   spend: Spend | None = None) -> Joined:
        k = EventKeys(event_id)
        spent_key, ttl = _spending(k, spend)
        kind, place = await self._run(
            "join", [k.queue, k.pre, k.seq, k.seen, k.status, k.stats, k.joins, *spent_key],
            [str(account), now_ms, policy, *ttl])
        return Joined(_s(kind), int(place))

    async def joins(self, event_id: int, batch: int = 10_000
                    ) -> AsyncIterator[list[tuple[str, float, str]]]:
        """Every account's first join, oldest first, in batches: ``(account, Unix
        seconds, device)``, the device its session's if it claimed one, else ""."""
        k = EventKeys(event_id)
        start = 0
        while True:
            page: list[Any] = await self.redis.zrange(
                k.joins, start, start + batch - 1, withscores=True)
            if not page:
                return
            accounts = [_s(member) for member, _ in page]
            sessions = await self.redis.hmget(k.sess, accounts)
            yield [(account, ms / 1000.0, _s(sess).partition("|")[2] if sess else "")
                   for account, (_, ms), sess in zip(accounts, page, sessions, strict=True)]
            start += batch

    async def claim(self, event_id: int, account: uuid.UUID, device: str, now_ms: int,
                    idle_ms: int, *, passthrough: bool = False, steal: bool = False,
                    spend: Spend | None = None) -> Claimed:
        k = EventKeys(event_id)
        spent_key, ttl = _spending(k, spend)
        kind, sid = await self._run(
            "claim", [k.pending, k.active, k.sess, k.stats, k.queue, *spent_key],
            [str(account), device, new_session_id(), now_ms, idle_ms, int(passthrough),
             int(steal), *ttl])
        return Claimed(_s(kind), _s(sid))

    async def place_of(self, event_id: int, account: uuid.UUID) -> int | None:
        score = await self.redis.zscore(EventKeys(event_id).queue, str(account))
        return None if score is None else int(score)

    async def session(self, event_id: int, account: uuid.UUID) -> str | None:
        """The account's current session id, None without a session."""
        raw = await self.redis.hget(EventKeys(event_id).sess, str(account))
        return None if raw is None else _s(raw).split("|", 1)[0]

    async def sessions(self, pairs: list[tuple[int, uuid.UUID]]) -> list[str | None]:
        """``session`` for many (event, account) pairs in one pipeline (the seat map's
        re-check of its open sockets)."""
        if not pairs:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for event_id, account in pairs:
                pipe.hget(EventKeys(event_id).sess, str(account))
            raw = await pipe.execute()
        return [None if r is None else _s(r).split("|", 1)[0] for r in raw]

    async def mark(self, which: str, batches: dict[int, dict[str, int]]) -> None:
        """Batched "last seen" updates (``seen`` polls, ``active`` requests):
        one ZADD per event, and only for members still there (XX) with a newer
        time (GT), so a dropped visitor is not brought back."""
        if not batches:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for event_id, members in batches.items():
                key = getattr(EventKeys(event_id), which)
                pipe.zadd(key, dict(members), xx=True, gt=True)
            await pipe.execute()

    # --- status, read by every edge process a few times a second -------------------------

    async def statuses(self, event_ids: Iterable[int]) -> dict[int, dict[str, str]]:
        ids = list(event_ids)
        if not ids:
            return {}
        async with self.redis.pipeline(transaction=False) as pipe:
            for event_id in ids:
                pipe.hgetall(EventKeys(event_id).status)
            found = await pipe.execute()
        return {event_id: _decode(raw) for event_id, raw in zip(ids, found, strict=True)}

    async def publish(self, event_id: int, fields: dict[str, str | int | float]) -> None:
        mapping: dict[Any, Any] = dict(fields)
        await self.redis.hset(EventKeys(event_id).status, mapping=mapping)

    async def figures(self, event_id: int) -> dict[str, Any]:
        k = EventKeys(event_id)
        status = _decode(await self.redis.hgetall(k.status))
        serving = status.get("serving", "0")
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zcount(k.queue, f"({serving}", "+inf")
            pipe.zcard(k.pre)
            pipe.zcard(k.active)
            pipe.zcard(k.pending)
            pipe.hgetall(k.stats)
            waiting, pre, active, pending, stats = await pipe.execute()
        return {"status": status, "queued": int(waiting) + int(pre), "prequeue": int(pre),
                "active": int(active), "pending": int(pending),
                "stats": {key: int(v) for key, v in _decode(stats).items()}}

    # --- the admitter (fenced by its lease) -------------------------------------------------

    async def acquire_lease(self, event_id: int, owner: str, ttl_ms: int) -> int:
        k = EventKeys(event_id)
        return int(await self._run("lease", [k.lease, k.fence], [owner, ttl_ms]))

    async def release_lease(self, event_id: int, owner: str) -> None:
        await self._run("release", [EventKeys(event_id).lease], [owner])

    async def sweep(self, event_id: int, fence: int, now_ms: int, grace_ms: int, claim_ms: int,
                    idle_ms: int, limit: int = 1000) -> Swept:
        k = EventKeys(event_id)
        out = await self._run(
            "sweep", [k.lease, k.queue, k.pre, k.seen, k.pending, k.active, k.sess, k.stats],
            [fence, now_ms, grace_ms, claim_ms, idle_ms, limit])
        if out[0] == -1:
            raise Fenced(event_id)
        return Swept(*(int(v) for v in out))

    async def admit(self, event_id: int, fence: int, n: int, now_ms: int, grace_ms: int,
                    cap: int, scan_limit: int = 1000) -> Admitted:
        k = EventKeys(event_id)
        out = await self._run(
            "admit", [k.lease, k.queue, k.seen, k.pending, k.active, k.status, k.stats],
            [fence, n, now_ms, grace_ms, cap, scan_limit])
        if out[0] == -1:
            raise Fenced(event_id)
        return Admitted(int(out[0]), int(out[1]), [_s(a) for a in out[2:]])

    async def close_draw(self, event_id: int, fence: int) -> int:
        k = EventKeys(event_id)
        n = int(await self._run("close_draw", [k.lease, k.queue, k.pre, k.seq, k.status],
                                [fence]))
        if n < 0:
            raise Fenced(event_id)
        return n

    async def participants(self, event_id: int) -> list[str]:
        return [_s(a) for a in await self.redis.zrange(EventKeys(event_id).pre, 0, -1)]

    async def assign_draw(self, event_id: int, fence: int, offset: int,
                          accounts: list[str]) -> int:
        k = EventKeys(event_id)
        n = int(await self._run("assign_draw", [k.lease, k.queue, k.pre],
                                [fence, offset, *accounts]))
        if n < 0:
            raise Fenced(event_id)
        return n

    async def finish_draw(self, event_id: int, fence: int) -> None:
        k = EventKeys(event_id)
        if int(await self._run("finish_draw", [k.lease, k.pre, k.status], [fence])) < 0:
            raise Fenced(event_id)

    async def merge_prequeue(self, event_id: int, fence: int) -> None:
        k = EventKeys(event_id)
        if int(await self._run("merge_prequeue", [k.lease, k.queue, k.pre], [fence])) < 0:
            raise Fenced(event_id)

    async def prequeue_size(self, event_id: int) -> int:
        return int(await self.redis.zcard(EventKeys(event_id).pre))
