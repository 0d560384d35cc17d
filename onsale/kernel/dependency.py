"""Dependencies fail fast (docs/security.md#dependencies-fail-fast).

A ``Dependency`` is one backing service as one process sees it (a Redis/Valkey
client, a PostgreSQL pool): a bound on every call and a circuit breaker
(``kernel.breaker``). A call that does not answer within the bound, or fails
to connect, counts as a failure; while the breaker is open calls fail at
once. Either way the caller gets ``DependencyUnavailable`` (the routes turn it
into their documented ``503``), and the log says once that the dependency
went away and once that it came back: no line per request.

``request_redis`` builds the Redis client of the request path: short socket,
connect and pool waits, no retries, every command and pipeline through the
dependency. ``background_redis`` is for loops that block on purpose (XREAD,
XREADGROUP) or move large replies: no breaker, a finite socket timeout. Both give
redis-py's cluster client, with the same bounds, when the URL names a Valkey Cluster
(``redis+cluster://``, ``kernel.valkey``); a plain URL gives the plain client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.exceptions
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterNode, ClusterPipeline, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from onsale.kernel.breaker import Breaker, Change, State
from onsale.kernel.config import Settings
from onsale.kernel.valkey import RedisClient, cluster_url

log = logging.getLogger("onsale.dependency")
T = TypeVar("T")

REDIS_OUTAGES: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,  # refused, reset, "No connection available" (pool wait)
    redis.exceptions.TimeoutError,     # socket timeout
    TimeoutError,                      # the call's own bound
    OSError,
)


class DependencyUnavailable(Exception):
    """The dependency did not answer (or its breaker is open): refuse, never guess."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.name = name
        self.detail = detail


# A cluster is also down when it says so (CLUSTERDOWN, during a failover) or when no
# node serves a slot; GuardedRedisCluster turns "no startup node answers" into a
# ConnectionError.
CLUSTER_OUTAGES = (*REDIS_OUTAGES, redis.exceptions.ClusterDownError,
                   redis.exceptions.SlotNotCoveredError)


class RedisUnavailable(DependencyUnavailable, redis.exceptions.ConnectionError):
    """Also a redis-py ``ConnectionError``, so existing handlers still match."""


class Dependency:
    """``timeout`` bounds each call once it has a connection; ``slots`` (with
    ``queue_wait``) bounds how long a call waits for one. Waiting for a free
    connection is this process being busy, not the dependency failing: it ends in
    a 503 for that call but opens no breaker (unless the call was the probe)."""

    def __init__(self, name: str, *, timeout: float | None, breaker: Breaker,
                 outages: tuple[type[BaseException], ...] = REDIS_OUTAGES,
                 error: type[DependencyUnavailable] = DependencyUnavailable,
                 slots: int | None = None, queue_wait: float | None = None) -> None:
        self.name = name
        self.timeout = timeout
        self.breaker = breaker
        self.outages = outages
        self.error = error
        self.slots = asyncio.Semaphore(slots) if slots is not None else None
        self.queue_wait = queue_wait

    # --- the verdicts, for callers that bracket a call themselves (kernel.db) --------------

    def admit(self) -> str | None:
        """``"call"``, ``"probe"`` (the one call a half-open breaker lets through) or
        None: refused at once."""
        was_closed = self.breaker.state is State.CLOSED
        if not self.breaker.allow():
            return None
        return "call" if was_closed else "probe"

    def went_away(self) -> bool:
        """Opened since a call was admitted (it waited its turn): refuse it too."""
        return self.breaker.state is State.OPEN

    def succeeded(self) -> None:
        if self.breaker.success() is Change.CLOSED:
            log.warning("%s came back after %.1f s", self.name, self.breaker.down_for())

    def failed(self, exc: BaseException) -> None:
        if self.breaker.failure() is Change.OPENED:
            log.error("%s went away (%s); failing fast with 503 and retrying every "
                      "%.1f-%.1f s", self.name, describe(exc), self.breaker.initial_backoff,
                      self.breaker.max_backoff)

    def busy(self, turn: str, exc: BaseException) -> None:
        """No free connection in time: only a probe learns something from that."""
        if turn == "probe":
            self.failed(exc)

    def abandoned(self) -> None:
        self.breaker.abandon()

    # --- a whole call ----------------------------------------------------------------------

    def refusal(self) -> DependencyUnavailable:
        return self.error(self.name, f"{self.name} is not answering; not retrying for "
                                     f"{self.breaker.retry_in():.1f} s")

    async def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` through the breaker, with a bounded wait for a connection and
        a bounded call."""
        turn = self.admit()
        if turn is None:
            raise self.refusal()
        if self.slots is not None:
            try:
                async with asyncio.timeout(self.queue_wait):
                    await self.slots.acquire()
            except TimeoutError as exc:
                self.busy(turn, exc)
                raise self.error(self.name, "every connection is busy") from None
            except BaseException:
                self.abandoned()
                raise
        try:
            if turn == "call" and self.went_away():
                raise self.refusal()
            return await self._call(call)
        finally:
            if self.slots is not None:
                self.slots.release()

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        try:
            async with asyncio.timeout(self.timeout):
                result = await call()
        except self.outages as exc:
            self.failed(exc)
            raise self.error(self.name, describe(exc)) from exc
        except Exception:
            self.succeeded()  # an error reply is an answer
            raise
        except BaseException:
            self.abandoned()
            raise
        self.succeeded()
        return result


def describe(exc: BaseException) -> str:
    """A short human reason (never the exception's class name)."""
    if isinstance(exc, TimeoutError | redis.exceptions.TimeoutError):
        return "no answer in time"
    text = str(exc).strip()
    return text[:160] if text else "connection failed"


def is_outage(exc: BaseException) -> bool:
    """A dependency being down (already logged once by its breaker), not a bug."""
    from onsale.kernel.problems import Problem

    return isinstance(exc, DependencyUnavailable) or (
        isinstance(exc, Problem) and exc.status == 503)


# --- Redis ---------------------------------------------------------------------------------


class GuardedPipeline(Pipeline):
    guard: Dependency

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        parent = super().execute
        result: list[Any] = await self.guard.run(lambda: parent(raise_on_error))
        return result


class GuardedRedis(Redis):
    """Every command and pipeline through ``guard`` (scripts run as commands)."""

    guard: Dependency

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        parent = super().execute_command
        return await self.guard.run(
            lambda: parent(*args, **options))  # type: ignore[no-untyped-call]

    def pipeline(self, transaction: bool = True,
                 shard_hint: str | None = None) -> GuardedPipeline:
        pipe = GuardedPipeline(
            self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.guard = self.guard
        return pipe


class GuardedClusterPipeline(ClusterPipeline):
    guard: Dependency

    async def initialize(self) -> ClusterPipeline:
        """Entering the pipeline discovers the cluster's slots if the client has not yet
        (its first use): through the guard too, so a cluster that is down fails this
        as any call, bounded, with the breaker told."""
        if getattr(self.cluster_client, "_initialize", True):
            client = self.cluster_client
            await self.guard.run(client.initialize)
        return await super().initialize()

    async def execute(self, raise_on_error: bool = True,
                      allow_redirections: bool = True) -> list[Any]:
        parent = super().execute
        result: list[Any] = await self.guard.run(
            lambda: parent(raise_on_error, allow_redirections))
        return result


class GuardedRedisCluster(RedisCluster):
    """``GuardedRedis`` for a cluster: every command (the slot map's discovery on first
    use included) and every pipeline through ``guard``."""

    guard: Dependency

    async def initialize(self, *args: Any, **kwargs: Any) -> RedisCluster:
        """Discovering the slots (first use, or after a node went away): when no
        startup node answers, redis-py says so with a ``RedisClusterException``, which
        also means a programming error elsewhere; here it is the outage it is."""
        try:
            return await super().initialize(*args, **kwargs)
        except redis.exceptions.RedisClusterException as exc:
            if isinstance(exc, redis.exceptions.SlotNotCoveredError):
                raise
            raise redis.exceptions.ConnectionError(str(exc)) from exc

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        parent = super().execute_command
        return await self.guard.run(lambda: parent(*args, **kwargs))

    def pipeline(self, transaction: Any | None = None,
                 shard_hint: Any | None = None) -> GuardedClusterPipeline:
        if shard_hint:
            raise ValueError("a cluster pipeline takes no shard_hint")
        # As RedisCluster.pipeline builds its own: the "abstract" attribute is a slot
        # redis-py's stubs declare on a base class and the client sets.
        pipe = GuardedClusterPipeline(self, transaction)  # type: ignore[abstract]
        pipe.guard = self.guard
        return pipe


# What request_redis returns: a plain or a cluster client, each guarded.
GuardedClient = GuardedRedis | GuardedRedisCluster


def request_redis(url: str, *, timeout: float = 0.25, pool_wait: float = 0.5,
                  backoff: float = 0.5, max_backoff: float = 2.0, max_connections: int = 64,
                  name: str = "Redis") -> GuardedClient:
    """The request path's client. ``timeout`` bounds the connect and each read or
    write (and, twice over, the whole call once it has a connection); ``pool_wait``
    how long a call waits for one of the ``max_connections``. redis-py's own
    retries are off: the breaker decides when to try again.

    For a cluster URL: redis-py's cluster client with the same socket bounds and no
    retries (redirections after a slot moved are still followed), at most
    ``max_connections`` to each node; the dependency's ``max_connections`` slots
    (waited for up to ``pool_wait``) bound the calls in flight, so a call never finds
    a node's connections all taken (the cluster client would fail at once, not
    wait)."""
    cluster = cluster_url(url)
    guard = Dependency(
        f"{name} at {redacted(url)}", timeout=2 * timeout,
        breaker=Breaker(backoff=backoff, max_backoff=max_backoff), error=RedisUnavailable,
        outages=REDIS_OUTAGES if cluster is None else CLUSTER_OUTAGES,
        slots=max_connections, queue_wait=pool_wait)
    if cluster is not None:
        nodes = [ClusterNode(host, port) for host, port in cluster.nodes[1:]]
        guarded = GuardedRedisCluster.from_url(
            cluster.url, startup_nodes=nodes, max_connections=max_connections,
            socket_timeout=timeout, socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0))
        assert isinstance(guarded, GuardedRedisCluster)
        guarded.guard = guard
        return guarded
    pool = BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=pool_wait, socket_timeout=timeout,
        socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))
    client = GuardedRedis(connection_pool=pool)
    client.guard = guard
    return client


def request_redis_for(settings: Settings, name: str = "Redis") -> GuardedClient:
    """``request_redis`` for REDIS_URL with the ONSALE_REDIS_TIMEOUT,
    ONSALE_REDIS_POOL_WAIT and ONSALE_DEPENDENCY_BACKOFF* settings."""
    if not settings.redis_url:
        raise ValueError("REDIS_URL is not set")
    return request_redis(settings.redis_url, timeout=settings.redis_timeout,
                         pool_wait=settings.redis_pool_wait,
                         backoff=settings.dependency_backoff,
                         max_backoff=settings.dependency_backoff_max, name=name)


BACKGROUND_CONNECTIONS = 10_000  # a cluster client's per node; blocked XREADs each hold one


def background_redis(url: str, *, socket_timeout: float = 30.0,
                     connect_timeout: float = 5.0) -> RedisClient:
    """Background loops: blocking reads and large replies, a finite wait all the same.
    A cluster URL gives the cluster client, with redis-py's retries."""
    cluster = cluster_url(url)
    if cluster is not None:
        nodes = [ClusterNode(host, port) for host, port in cluster.nodes[1:]]
        return RedisCluster.from_url(
            cluster.url, startup_nodes=nodes, max_connections=BACKGROUND_CONNECTIONS,
            socket_timeout=socket_timeout, socket_connect_timeout=connect_timeout)
    client: Redis = Redis.from_url(url, socket_timeout=socket_timeout,
                                   socket_connect_timeout=connect_timeout)
    return client


def redacted(url: str) -> str:
    """The URL without its password, for logs."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.rsplit("@", 1)[1]
    return f"{scheme}{sep}{rest}"
