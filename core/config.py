"""Settings read from environment variables (documented in docs/configuration.md)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass


class ConfigError(ValueError):
    """A configuration value is missing or malformed."""


def env_int(env: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number, got {raw!r}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


@dataclass(frozen=True)
class Settings:
    database_url: str
    redis_url: str | None
    secret_key: str
    admin_token: str
    hold_ttl_seconds: int = 300
    max_tickets_per_account: int = 6
    max_seats_per_hold: int = 6
    db_pool_min: int = 2
    db_pool_max: int = 8
    db_acquire_timeout: float = 2.0
    db_statement_timeout_ms: int = 5000
    sweep_interval: float = 1.0
    sweep_batch: int = 500
    cookie_secure: bool = False
    session_max_age: int = 12 * 3600
    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, require_secrets: bool = True,
    ) -> Settings:
        """Read settings; ``require_secrets=False`` for roles that sign nothing (worker)."""
        env = os.environ if env is None else env
        database_url = env.get("DATABASE_URL", "")
        if not database_url:
            raise ConfigError("DATABASE_URL is not set (onsale dev starts its own PostgreSQL)")
        secret = env.get("ONSALE_SECRET_KEY", "")
        if require_secrets and len(secret) < 16:
            raise ConfigError("ONSALE_SECRET_KEY must be set to at least 16 characters")
        admin = env.get("ONSALE_ADMIN_TOKEN", "")
        if require_secrets and len(admin) < 16:
            raise ConfigError("ONSALE_ADMIN_TOKEN must be set to at least 16 characters")
        pool_max = env_int(env, "ONSALE_DB_POOL_MAX", 8, 1, 1000)
        pool_min = env_int(env, "ONSALE_DB_POOL_MIN", min(2, pool_max), 0, 1000)
        if pool_min > pool_max:
            raise ConfigError(
                f"ONSALE_DB_POOL_MIN ({pool_min}) must not exceed ONSALE_DB_POOL_MAX ({pool_max})"
            )
        return cls(
            database_url=database_url,
            redis_url=env.get("REDIS_URL") or None,
            secret_key=secret,
            admin_token=admin,
            hold_ttl_seconds=env_int(env, "ONSALE_HOLD_TTL_SECONDS", 300, 1, 3600),
            max_tickets_per_account=env_int(env, "ONSALE_MAX_TICKETS_PER_ACCOUNT", 6, 1, 100),
            max_seats_per_hold=env_int(env, "ONSALE_MAX_SEATS_PER_HOLD", 6, 1, 100),
            db_pool_min=pool_min,
            db_pool_max=pool_max,
            db_acquire_timeout=_float(env, "ONSALE_DB_ACQUIRE_TIMEOUT", 2.0),
            db_statement_timeout_ms=env_int(
                env, "ONSALE_DB_STATEMENT_TIMEOUT_MS", 5000, 10, 600_000),
            sweep_interval=_float(env, "ONSALE_SWEEP_INTERVAL", 1.0),
            sweep_batch=env_int(env, "ONSALE_SWEEP_BATCH", 500, 1, 100000),
            cookie_secure=_bool(env, "ONSALE_COOKIE_SECURE", False),
            session_max_age=env_int(env, "ONSALE_SESSION_MAX_AGE", 12 * 3600, 60, 30 * 86400),
        )
