"""What the tiers of one process share, opened once by the composition root
(``onsale.kernel.process.running_shared``): the settings, the request path's database
pool and Redis client (one circuit breaker each per process), the sessions and the
operator-token throttle. Handlers read it through :func:`shared`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from starlette.requests import HTTPConnection

from onsale.kernel.admin_throttle import AdminThrottle

if TYPE_CHECKING:
    from onsale.kernel.config import Settings
    from onsale.kernel.db import Database
    from onsale.kernel.dependency import GuardedClient
    from onsale.kernel.sessions import Sessions
    from onsale.kernel.shards import ShardSet


@dataclass(frozen=True)
class Shared:
    settings: Settings
    db: Database | None          # None: no tier of this process reads the database
    redis: GuardedClient | None  # None: REDIS_URL unset, or no tier needs it
    sessions: Sessions           # its store is Redis: without one it answers 503
    # Failed operator-token attempts per address (kernel.auth.require_admin).
    admin_throttle: AdminThrottle = field(default_factory=AdminThrottle)
    # The shards and the cached placement (docs/scaling.md#routing); None with no
    # database. Shard 1's pool is ``db``.
    shards: ShardSet | None = None

    @property
    def database(self) -> Database:
        """The pool, for a tier that is only started where there is one."""
        if self.db is None:
            raise RuntimeError("this process opened no database pool")
        return self.db

    @property
    def shard_set(self) -> ShardSet:
        """The shards, for a tier that is only started where there is a database."""
        if self.shards is None:
            raise RuntimeError("this process opened no database pool")
        return self.shards


def shared(connection: HTTPConnection) -> Shared:
    """The process's shared parts (set by the composition root's lifespan)."""
    return cast(Shared, connection.app.state.shared)
