"""The settings of a core, worker, edge or seat-map process, read from the environment
once at start-up (docs/configuration.md, whose tables are generated from these
declarations by ``python -m onsale.environment --write``).

Each group of settings is a section (``onsale.kernel.settings``); :class:`Settings`
inherits them all, so the rest of the code reads one flat, typed, frozen object
(``settings.hold_ttl_seconds``) while each section keeps its own checks and table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from onsale.kernel.config_payments import (
    CRASH_POINTS,
    STRIPE_API,
    PaymentSettings,
    check_api_base,
    is_loopback_api_host,
)
from onsale.kernel.config_sessions import SecuritySettings, SessionSettings
from onsale.kernel.config_waiting_room import WaitingRoomSettings
from onsale.kernel.settings import ConfigError, Section, load, read, setting
from onsale.kernel.valkey import cluster_url

__all__ = ["CRASH_POINTS", "STRIPE_API", "ConfigError", "HoldDefaults", "Settings",
           "check_api_base", "is_loopback_api_host"]

_ROLES = ("core", "worker", "edge", "cdc", "seatmap", "dev")


def redis_url(name: str, raw: str) -> str:
    """REDIS_URL as given; a cluster URL must name its nodes as ``host:port``."""
    try:
        cluster_url(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    return raw


@dataclass(frozen=True)
class ServiceSettings(Section):
    database_url: str = setting(
        "",
        "The authoritative database. Every read and write of inventory goes here; nothing "
        "reads a replica or a cache. When unset, `onsale dev`, `onsale migrate`, `onsale "
        "audit` and `onsale event create` use the embedded cluster in "
        "`$ONSALE_DATA_DIR/pg` (see below).",
        env="DATABASE_URL", default_doc="none; required by `onsale serve`",
        range_doc="asyncpg DSN, e.g. `postgresql://onsale:secret@db1:5432/onsale` "
        "(`?sslmode=require` etc. allowed). **PostgreSQL 18 or later**: the schema uses "
        "`uuidv7()`, its functions `RETURNING old.*`.")
    redis_url: str | None = setting(
        None,
        "The Redis/Valkey that receives the outbox stream. When it is set, the worker role "
        "runs the outbox relay and the ticket consumer besides the sweeper "
        "([outbox.md](outbox.md)); when unset, the worker runs no relay and no consumer, "
        "outbox rows stay unpublished and no tickets are issued. **Required by the edge "
        "role** (the waiting room lives there, [edge.md](edge.md)). **The core role needs "
        "it for sessions and sales**: sessions and the sign-in throttle live there (without "
        "it sign-up, sign-in and every cookie-authenticated request are `503 "
        "session_unavailable`), its gate reads admission revocations there and it publishes "
        "its health for the admission controller; without it core still checks token "
        "signatures, then answers every admitted request `503 admission_unavailable` (fail "
        "closed). `onsale dev` starts an embedded Valkey and sets it when unset (`onsale dev "
        "--valkey-cluster`: a Valkey Cluster of three primaries). A `redis+cluster://` URL "
        "names a Valkey/Redis Cluster: every client is then redis-py's cluster client, with "
        "the same bounds ([scaling.md](scaling.md#valkey-cluster)).",
        env="REDIS_URL", parse=redis_url,
        range_doc="`redis://host:6379/0` (one server; `rediss://` with TLS); or "
        "`redis+cluster://host1:6379,host2:6379` (a cluster, `rediss+cluster://` with TLS: "
        "its startup nodes, each `host:port`, database 0 only)")
    secret_key: str = setting(
        "",
        "Signs the session cookie (itsdangerous, salt `onsale.session.v2`). Every core, edge "
        "and seat-map process must have the same value. Changing it signs every user out. "
        "The worker and cdc roles neither need nor check it.",
        default_doc="none; required by the core, edge and seatmap roles",
        range_doc="at least 16 characters")
    admin_token: str = setting(
        "",
        "The operator bearer token for `POST /api/ops/events` and the edge's `/api/ops/…` "
        "routes (`Authorization: Bearer <token>`), compared in constant time. The worker "
        "and cdc roles neither need nor check it.",
        default_doc="none; required by the core, edge and seatmap roles",
        range_doc="at least 16 characters")


@dataclass(frozen=True)
class HoldDefaults(Section):
    hold_ttl_seconds: int = setting(
        300,
        "Default `hold_ttl_seconds` for a new event: a hold expires `ttl` seconds after its "
        "seats are claimed, by the database clock (`clock_timestamp()`, not the transaction "
        "start).", lo=1, hi=3600)
    max_tickets_per_account: int = setting(
        6,
        "Default `max_tickets_per_account` for a new event: seats one account may have in "
        "holds that are active (HELD and not expired, PAYMENT_PENDING, CONFIRMED) for that "
        "event.", lo=1, hi=100)
    max_seats_per_hold: int = setting(
        6, "Default `max_seats_per_hold` for a new event: seats in a single hold request.",
        lo=1, hi=100)


@dataclass(frozen=True)
class PoolSettings(Section):
    db_pool_min: int = setting(
        2,
        "Connections the asyncpg pool opens at startup. A value above `ONSALE_DB_POOL_MAX` "
        "stops startup (`onsale serve: ONSALE_DB_POOL_MIN (5) must not exceed "
        "ONSALE_DB_POOL_MAX (2)`, exit 2). With a value above 0 the process fails to start "
        "while the database is unreachable.",
        lo=0, hi=1000, default_doc="`min(2, ONSALE_DB_POOL_MAX)`",
        range_doc="integer 0–1000, at most `ONSALE_DB_POOL_MAX`")
    db_pool_max: int = setting(
        8,
        "Most connections one process holds. Core and worker processes each have their own "
        "pool of this size; a core process also reads venue layouts on a pool of at most 2 "
        "connections of its own (opened on first use, with this file's acquire and request "
        "timeouts; [architecture.md](architecture.md#the-venue-layout)); see "
        "[operations.md](operations.md#database-sizing).", lo=1, hi=1000)
    db_acquire_timeout: float = setting(
        0.5,
        "How long a request waits for a free pool connection (including opening one). On "
        "timeout the request gets `503 inventory_unavailable` (`detail: \"The database did "
        "not answer in time; retry with the same Idempotency-Key.\"`). The sweeper does not "
        "use this timeout. ([security.md](security.md#dependencies-fail-fast))",
        positive=True, unit="s")
    db_request_timeout_ms: int = setting(
        500,
        "Request paths (core, edge, seatmap pools): sent as `statement_timeout`; the "
        "client-side asyncpg `command_timeout` is this value + 250 ms (a server that does "
        "not answer at all). A statement that runs longer is cancelled and the request gets "
        "`503 inventory_unavailable`; a connection whose statement the client gave up on is "
        "closed, not reused. In `onsale dev` the sweeper, relay and reconciler share this "
        "pool and its bound.", lo=10, hi=60_000, unit="ms")
    db_statement_timeout_ms: int = setting(
        5000,
        "Background work and the rare long statements of a request: sent as "
        "`statement_timeout` on the worker role's pool (sweeper, outbox relay, ticket "
        "consumer, reconciler; in `onsale dev`, the background loops' own small pool) and on "
        "the connection of its own that `POST /api/ops/events` (with its `ANALYZE`) and the "
        "waiting room's random draw use; the client-side `command_timeout` is this value + "
        "1 s. The CLI commands (`migrate`, `audit`, `event create`) connect without it.",
        lo=10, hi=600_000, unit="ms")

    def check(self) -> None:
        if self.db_pool_min > self.db_pool_max:
            raise ConfigError(f"ONSALE_DB_POOL_MIN ({self.db_pool_min}) must not exceed "
                              f"ONSALE_DB_POOL_MAX ({self.db_pool_max})")


@dataclass(frozen=True)
class DependencySettings(Section):
    redis_timeout: float = setting(
        0.25,
        "Request-path Redis/Valkey clients (core's gate and sessions, the edge, the seat "
        "map): the connect and each read or write of a command, and (twice over) the whole "
        "call. No retries by redis-py. Past it the request gets its `503` "
        "(`admission_unavailable`, `queue_unavailable`, `session_unavailable`).",
        positive=True, hi=10, unit="s")
    redis_pool_wait: float = setting(
        0.5,
        "How long a request-path call waits for one of its client's 64 connections. Waiting "
        "that long because every connection is in use is this process being busy: a `503` "
        "for that call, not a breaker failure.", positive=True, hi=10, unit="s")
    dependency_backoff: float = setting(
        0.5,
        "After two failures in a row a dependency's circuit breaker opens: for this long "
        "every call fails at once with its `503`; then one call probes.",
        positive=True, hi=60, unit="s")
    dependency_backoff_max: float = setting(
        2.0, "Each failed probe doubles the back-off, up to this.", positive=True, hi=300,
        unit="s", range_doc="seconds, at least `ONSALE_DEPENDENCY_BACKOFF`, at most 300")
    allow_simulator: bool = setting(
        False,
        "Whether core and worker may use a payment provider that says it is the onsale "
        "simulator (`Onsale-Simulator: 1`). Unset, `onsale serve --role core|worker` exits 2 "
        "against it, and its answers and webhooks are not trusted "
        "([security.md](security.md#the-payment-simulator-never-takes-real-money)). `onsale "
        "dev` sets it when it starts the simulator itself (no `ONSALE_STRIPE_SECRET_KEY` "
        "given).")

    def check(self) -> None:
        if self.dependency_backoff_max < self.dependency_backoff:
            raise ConfigError("ONSALE_DEPENDENCY_BACKOFF_MAX must be at least "
                              "ONSALE_DEPENDENCY_BACKOFF")


@dataclass(frozen=True)
class BackgroundSettings(Section):
    sweep_interval: float = setting(
        1.0,
        "Pause after each sweeper pass. Idempotency pruning has its own fixed cadence, not "
        "tied to this value: with the first successful pass, then with the first successful "
        "pass 60 s or more after the previous prune (`core/sweeper.py`; see "
        "[operations.md](operations.md#database-sizing)).", positive=True, unit="s")
    sweep_batch: int = setting(
        500, "Expired holds released per sweep statement. A pass repeats the statement "
        "until a batch releases fewer holds than this.", lo=1, hi=100_000)
    ga_rebalance_interval: float = setting(
        1.0,
        "Pause after each pass of the GA quota plane (`core/ga_quota.py`): it spreads each "
        "general-admission tier's available places over its stripes once one runs dry, and "
        "drains retired stripes "
        "([general-admission.md](general-admission.md#the-quota-plane)). Runs where the "
        "sweeper runs.", positive=True, unit="s")
    ga_batch_max: int = setting(
        32,
        "General-admission hold requests for one tier that arrive together in a core "
        "process are sent as one transaction, at most this many "
        "([general-admission.md](general-admission.md#batched-holds)); `1`: every GA hold "
        "alone.", lo=1, hi=64,
        range_doc="integer 1–64 (a batch takes one advisory lock per account: PostgreSQL's "
        "lock table)")
    ga_batch_inflight: int = setting(
        1,
        "Batches of one GA tier in the database at once, per core process; a request that "
        "finds fewer running starts one at once. One gives the biggest batches and the most "
        "holds per CPU second ([benchmarks.md](benchmarks.md): 2 at once gave smaller "
        "batches and 20 % fewer holds a second on 2 cores); several core processes still "
        "send theirs side by side. A request waits in the queue at most "
        "`ONSALE_DB_ACQUIRE_TIMEOUT`, then gets `503 inventory_unavailable`, as it would "
        "waiting for a pool connection.", lo=1, hi=64)
    seat_batch_max: int = setting(
        32,
        "Seat hold requests (`seat_ids`) for one event that arrive together in a core "
        "process are sent as one transaction, at most this many, each decided in arrival "
        "order with the answer it would get alone "
        "([design.md](design.md#seat-holds-in-batches)); `1`: every seat hold alone. "
        "Best-available holds always run alone.", lo=1, hi=64,
        range_doc="integer 1–64 (a batch takes one advisory lock per account: PostgreSQL's "
        "lock table)")
    seat_batch_inflight: int = setting(
        1,
        "Batches of one event's seat holds in the database at once, per core process; a "
        "request that finds fewer running starts one at once. A request waits in the queue "
        "at most `ONSALE_DB_ACQUIRE_TIMEOUT`, then gets `503 inventory_unavailable`.",
        lo=1, hi=64)


@dataclass(frozen=True)
class OutboxSettings(Section):
    outbox_stream_maxlen: int = setting(
        1_000_000,
        "`MAXLEN ~` of every XADD to the stream `onsale:outbox`: Redis keeps about this many "
        "entries. Keep it larger than the number of entries written while an order may wait "
        "for its payment capture (an entry trimmed while still pending is lost to the ticket "
        "consumer).", lo=1000, hi=1_000_000_000)
    outbox_retention_seconds: int = setting(
        7 * 86400,
        "Published outbox rows older than this are deleted by the relay (about once a "
        "minute, in batches). Unpublished rows are never deleted. Rows can be replayed from "
        "Postgres only within this window.", lo=60, hi=365 * 86400, unit="s",
        default_doc="`604800` (7 days)")


@dataclass(frozen=True)
class CommandSettings(Section):
    """Read by the CLI and the app factory, not by a running tier."""

    data_dir: str = setting(
        ".onsale",
        "Where `onsale dev` (and the other CLI commands, when `DATABASE_URL` is unset) keep "
        "`pg/` (embedded PostgreSQL), `valkey/` (embedded Valkey), `psp/` (the provider "
        "simulator's state), `psp.log` (its output) and `secrets.json`.",
        range_doc="a path, relative to the current directory")
    role: str = setting(
        "core",
        "The role built by `onsale.compose:app_from_env`, the factory for servers that "
        "take an import string, e.g. `uvicorn --factory onsale.compose:app_from_env` (with "
        "`ONSALE_OPS_PORT`; one process per ops port). `dev` runs every tier in one process "
        "as in `onsale dev`, without the embedded servers. `onsale serve` ignores it (it "
        "takes `--role`). See [operations.md](operations.md#processes).", choices=_ROLES)


@dataclass(frozen=True)
class Settings(SecuritySettings, SessionSettings, WaitingRoomSettings, PaymentSettings,
               OutboxSettings, BackgroundSettings, DependencySettings, PoolSettings,
               HoldDefaults, ServiceSettings):
    """Every section a tier reads, as one object."""

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, require_secrets: bool = True,
        dev: bool = False,
    ) -> Settings:
        """Read settings; ``require_secrets=False`` for roles that sign nothing (worker);
        ``dev`` for ``onsale dev`` only (a plain-http payment provider anywhere)."""
        env = os.environ if env is None else env
        values = read(cls, env)
        if not values.get("database_url"):
            raise ConfigError("DATABASE_URL is not set (onsale dev starts its own PostgreSQL)")
        for key, name in (("secret_key", "ONSALE_SECRET_KEY"),
                          ("admin_token", "ONSALE_ADMIN_TOKEN")):
            if require_secrets and len(values.get(key, "")) < 16:
                raise ConfigError(f"{name} must be set to at least 16 characters")
        if "db_pool_min" not in values:
            values["db_pool_min"] = min(2, values.get("db_pool_max", cls.db_pool_max))
        return cls(**values, plain_http_provider=dev)


def hold_defaults(env: Mapping[str, str]) -> HoldDefaults:
    """The per-event defaults alone (``onsale event create``), range-checked as in
    :class:`Settings`."""
    return load(HoldDefaults, env)
