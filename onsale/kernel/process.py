"""Opening what the tiers of one process share (``onsale.kernel.shared.Shared``)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass

from onsale.kernel.admin_throttle import AdminThrottle
from onsale.kernel.config import Settings
from onsale.kernel.db import Database, create_pool
from onsale.kernel.dependency import request_redis_for
from onsale.kernel.session_store import SessionStore
from onsale.kernel.sessions import Sessions, build_sessions
from onsale.kernel.shards import running_shards
from onsale.kernel.shared import Shared


@dataclass(frozen=True)
class Needs:
    """What a process's tiers need of the shared parts."""

    database: bool = True
    redis: bool = True
    request_path: bool = True    # request statement bounds (False: background bounds)
    small_pool: bool = False     # a seat-map process reads rarely: at most 2 connections


def unopened(settings: Settings) -> Shared:
    """The shared parts before the lifespan opens anything: the settings and the
    session codec (a page can render, signed out, without a database)."""
    return Shared(settings, None, None, build_sessions(settings), admin_throttle(settings))


@contextlib.asynccontextmanager
async def running_shared(settings: Settings, needs: Needs,
                         sessions: Sessions | None = None) -> AsyncIterator[Shared]:
    """Open what ``needs`` says; ``sessions``: the ones handed out before (their
    store is attached here)."""
    async with contextlib.AsyncExitStack() as stack:
        db = shards = None
        if needs.database:
            pool_settings = (dataclasses.replace(settings, db_pool_min=0, db_pool_max=2)
                             if needs.small_pool else settings)
            pool = await create_pool(pool_settings, request_path=needs.request_path)
            stack.push_async_callback(pool.close)
            db = Database.from_settings(pool, settings)
            # Every other shard gets a pool bounded as this one.
            shards = await stack.enter_async_context(
                running_shards(pool_settings, db, request_path=needs.request_path))
        sessions = sessions or build_sessions(settings)
        redis = None
        if needs.redis and settings.redis_url is not None:
            redis = request_redis_for(settings)
            stack.push_async_callback(redis.aclose)
            sessions.attach(SessionStore(redis))
        yield Shared(settings, db, redis, sessions, admin_throttle(settings), shards)


def admin_throttle(settings: Settings) -> AdminThrottle:
    """The process's limit on failed operator-token attempts per address."""
    return AdminThrottle(settings.admin_limit_failures, settings.admin_limit_window_seconds)
