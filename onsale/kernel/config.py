"""Settings read from environment variables (documented in docs/configuration.md)."""

from __future__ import annotations

import ipaddress
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from onsale.kernel.origins import parse_origin


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


def _number(env: Mapping[str, str], name: str) -> float | None:
    """A finite number, or None when unset."""
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {raw!r}")
    return value


def _share(env: Mapping[str, str], name: str, default: float, *, zero: bool = False) -> float:
    """A fraction in (0, 1], or [0, 1] with ``zero``."""
    value = _number(env, name)
    if value is None:
        return default
    if not ((0 <= value if zero else 0 < value) and value <= 1):
        raise ConfigError(f"{name} must be a number between 0 and 1, got {env[name]!r}")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    value = _number(env, name)
    if value is None:
        return default
    if value <= 0:
        raise ConfigError(f"{name} must be a positive number, got {env[name]!r}")
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
    db_acquire_timeout: float = 0.5
    db_statement_timeout_ms: int = 5000
    sweep_interval: float = 1.0
    sweep_batch: int = 500
    ga_rebalance_interval: float = 1.0
    # GA holds of one tier that arrive together share a transaction (core/ga_batch.py):
    # at most this many a batch (1: every GA hold alone), this many batches of a tier
    # at once in a process.
    ga_batch_max: int = 32
    ga_batch_inflight: int = 1
    outbox_stream_maxlen: int = 1_000_000
    outbox_retention_seconds: int = 7 * 86400
    cookie_secure: bool = False
    session_max_age: int = 12 * 3600
    # The payment provider, spoken to through the official stripe SDK: Stripe's API, or
    # the simulator's (ONSALE_STRIPE_API_BASE). No secret key: no payments.
    stripe_api_base: str = "https://api.stripe.com"
    stripe_secret_key: str = ""
    stripe_publishable_key: str = ""
    stripe_webhook_secret: str = ""
    stripe_timeout: float = 10.0
    payment_grace_seconds: int = 600
    checkout_min_remaining_seconds: int = 15
    payment_first_check_seconds: int = 30
    payment_retry_seconds: int = 5
    reconcile_interval: float = 1.0
    public_url: str = "http://127.0.0.1:8000"
    crash_at: str | None = None
    admission_keys: str = ""
    admission_ttl_seconds: int = 600
    queue_poll_seconds: int = 5
    queue_abandon_seconds: int = 300
    admission_claim_seconds: int = 120
    shopper_idle_seconds: int = 600
    admitter_interval: float = 0.25
    join_limit_ip: int = 600
    join_limit_account: int = 30
    poll_limit_ip: int = 6000
    poll_limit_account: int = 120
    # The published random draw (docs/edge.md#serving-the-draw): requests
    # per minute per client address, the most ids a page holds (also its default), and the
    # memory of the encoded pages kept per process.
    draw_limit_ip: int = 120
    draw_page_max: int = 10_000
    draw_cache_mb: int = 64
    # The admission controller's targets (docs/edge.md#the-adaptive-controller).
    target_hold_p99_ms: float = 300.0
    target_lock_wait_p99_ms: float = 100.0
    target_conflict_rate: float = 0.6
    target_payment_error_rate: float = 0.05
    target_completion_floor: float = 0.0
    target_active_headroom: float = 0.9
    # Cross-site request forgery (docs/security.md#cross-site-request-forgery):
    # origins besides ONSALE_PUBLIC_URL's whose pages may post (ONSALE_ALLOWED_ORIGINS).
    allowed_origins: tuple[str, ...] = ()
    # Failed operator-token attempts per client address per window, per process
    # (docs/security.md#the-operator-token); past it 429 rate_limited.
    admin_limit_failures: int = 10
    admin_limit_window_seconds: int = 60
    # Sessions and sign-in (docs/configuration.md#sessions-and-sign-in,
    # docs/security.md#sessions): session_settings(env) reads them.
    session_store_timeout: float = 0.5
    signin_window_seconds: int = 60
    signin_limit_ip: int = 60
    signin_limit_email: int = 10
    signin_lockout_after: int = 5
    signin_lockout_seconds: int = 30
    signin_lockout_max_seconds: int = 900
    password_workers: int = 2
    password_queue: int = 16
    # Dependencies fail fast (docs/security.md#dependencies-fail-fast); read by
    # dependency_settings(env). Request paths: PostgreSQL statements are cancelled by the
    # server after db_request_timeout_ms, and given up by the client 250 ms later; every
    # Redis/Valkey call answers within redis_timeout; after a failure the dependency's
    # circuit breaker refuses calls for dependency_backoff seconds, doubling up to
    # dependency_backoff_max. The payment simulator guard: allow_simulator.
    db_request_timeout_ms: int = 500
    redis_timeout: float = 0.25
    redis_pool_wait: float = 0.5
    dependency_backoff: float = 0.5
    dependency_backoff_max: float = 2.0
    allow_simulator: bool = False
    @property
    def payments_configured(self) -> bool:
        """A provider to pay through (ONSALE_STRIPE_SECRET_KEY is set)."""
        return bool(self.stripe_secret_key)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, require_secrets: bool = True,
        dev: bool = False,
    ) -> Settings:
        """Read settings; ``require_secrets=False`` for roles that sign nothing (worker);
        ``dev`` for ``onsale dev`` only (a plain-http payment provider anywhere)."""
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
            db_acquire_timeout=_float(env, "ONSALE_DB_ACQUIRE_TIMEOUT", 0.5),
            db_statement_timeout_ms=env_int(
                env, "ONSALE_DB_STATEMENT_TIMEOUT_MS", 5000, 10, 600_000),
            sweep_interval=_float(env, "ONSALE_SWEEP_INTERVAL", 1.0),
            sweep_batch=env_int(env, "ONSALE_SWEEP_BATCH", 500, 1, 100000),
            ga_rebalance_interval=_float(env, "ONSALE_GA_REBALANCE_INTERVAL", 1.0),
            ga_batch_max=env_int(env, "ONSALE_GA_BATCH_MAX", 32, 1, 64),
            ga_batch_inflight=env_int(env, "ONSALE_GA_BATCH_INFLIGHT", 1, 1, 64),
            outbox_stream_maxlen=env_int(
                env, "ONSALE_OUTBOX_STREAM_MAXLEN", 1_000_000, 1000, 1_000_000_000),
            outbox_retention_seconds=env_int(
                env, "ONSALE_OUTBOX_RETENTION_SECONDS", 7 * 86400, 60, 365 * 86400),
            cookie_secure=_bool(env, "ONSALE_COOKIE_SECURE", False),
            session_max_age=env_int(env, "ONSALE_SESSION_MAX_AGE", 12 * 3600, 60, 30 * 86400),
            **payment_settings(env, dev=dev),
            **edge_settings(env),
            **session_settings(env),
            **security_settings(env),
            **dependency_settings(env),
        )


STRIPE_API = "https://api.stripe.com"


def is_loopback_api_host(host: str | None) -> bool:
    """Exactly ``localhost``, 127.0.0.0/8 or ::1: names a server reaches without a
    network (not ``*.localhost``, which a resolver may send elsewhere)."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_api_base(api_base: str, *, dev: bool = False) -> str:
    """ONSALE_STRIPE_API_BASE, or a ConfigError: an absolute http(s) URL, and plain
    http only on a loopback host (a simulator on this machine), except in ``onsale dev``:
    the secret key, card tokenization and every payment answer travel over it."""
    if not api_base.startswith(("http://", "https://")):
        raise ConfigError(f"ONSALE_STRIPE_API_BASE must be an http(s) URL, got {api_base!r}")
    try:
        host = urlsplit(api_base).hostname
    except ValueError:
        host = None
    if not host:
        raise ConfigError(f"ONSALE_STRIPE_API_BASE must name a host, got {api_base!r}")
    if api_base.startswith("http://") and not dev and not is_loopback_api_host(host):
        raise ConfigError(
            f"ONSALE_STRIPE_API_BASE must be https:// (got {api_base!r}): plain http is "
            "accepted only on a loopback host (127.0.0.1, ::1, localhost) or in onsale dev, "
            "since the secret key and every payment answer travel over it")
    return api_base


def payment_settings(env: Mapping[str, str], *, dev: bool = False) -> dict[str, Any]:
    """The provider and the checkout timings (docs/configuration.md#payments)."""
    api_base = check_api_base((env.get("ONSALE_STRIPE_API_BASE") or STRIPE_API).rstrip("/"),
                              dev=dev)
    secret_key = env.get("ONSALE_STRIPE_SECRET_KEY", "")
    publishable = env.get("ONSALE_STRIPE_PUBLISHABLE_KEY", "")
    webhook_secret = env.get("ONSALE_STRIPE_WEBHOOK_SECRET", "")
    if secret_key:
        if not secret_key.startswith(("sk_", "rk_")) or len(secret_key) < 16:
            raise ConfigError("ONSALE_STRIPE_SECRET_KEY must be a secret key (sk_… or rk_…)")
        if not publishable.startswith("pk_"):
            raise ConfigError("ONSALE_STRIPE_PUBLISHABLE_KEY must be set to a pk_… key "
                              "(the checkout page tokenizes cards with it)")
        if not webhook_secret.startswith("whsec_"):
            raise ConfigError("ONSALE_STRIPE_WEBHOOK_SECRET must be set to the endpoint's "
                              "signing secret (whsec_…)")
    public_url = (env.get("ONSALE_PUBLIC_URL") or "http://127.0.0.1:8000").rstrip("/")
    if not public_url.startswith(("http://", "https://")):
        raise ConfigError(f"ONSALE_PUBLIC_URL must be an http(s) URL, got {public_url!r}")
    crash_at = env.get("ONSALE_CRASH_AT") or None
    if crash_at is not None and crash_at not in CRASH_POINTS:
        raise ConfigError(f"ONSALE_CRASH_AT must be one of {', '.join(CRASH_POINTS)}")
    return {
        "stripe_api_base": api_base,
        "stripe_secret_key": secret_key,
        "stripe_publishable_key": publishable,
        "stripe_webhook_secret": webhook_secret,
        "stripe_timeout": _float(env, "ONSALE_STRIPE_TIMEOUT", 10.0),
        "payment_grace_seconds": env_int(env, "ONSALE_PAYMENT_GRACE_SECONDS", 600, 0, 86400),
        "checkout_min_remaining_seconds": env_int(
            env, "ONSALE_CHECKOUT_MIN_REMAINING_SECONDS", 15, 0, 3600),
        "payment_first_check_seconds": env_int(
            env, "ONSALE_PAYMENT_FIRST_CHECK_SECONDS", 30, 0, 3600),
        "payment_retry_seconds": env_int(env, "ONSALE_PAYMENT_RETRY_SECONDS", 5, 1, 3600),
        "reconcile_interval": _float(env, "ONSALE_RECONCILE_INTERVAL", 1.0),
        "public_url": public_url,
        "crash_at": crash_at,
    }


def edge_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """The waiting room (docs/configuration.md#waiting-room, docs/edge.md)."""
    keys = env.get("ONSALE_ADMISSION_KEYS", "")
    for key in (k.strip() for k in keys.split(",")):
        if key and len(key) < 16:
            raise ConfigError("every ONSALE_ADMISSION_KEYS key must be at least 16 characters")
    abandon = env_int(env, "ONSALE_QUEUE_ABANDON_SECONDS", 300, 10, 86400)
    poll = env_int(env, "ONSALE_QUEUE_POLL_SECONDS", 5, 1, 60)
    if poll * 2 > abandon:
        raise ConfigError("ONSALE_QUEUE_POLL_SECONDS must be at most half of "
                          "ONSALE_QUEUE_ABANDON_SECONDS (a polling visitor is never dropped)")
    return {
        "admission_keys": keys,
        "admission_ttl_seconds": env_int(env, "ONSALE_ADMISSION_TTL_SECONDS", 600, 30, 86400),
        "queue_poll_seconds": poll,
        "queue_abandon_seconds": abandon,
        "admission_claim_seconds": env_int(env, "ONSALE_ADMISSION_CLAIM_SECONDS", 120, 10, 3600),
        "shopper_idle_seconds": env_int(env, "ONSALE_SHOPPER_IDLE_SECONDS", 600, 30, 86400),
        "admitter_interval": _float(env, "ONSALE_ADMITTER_INTERVAL", 0.25),
        "join_limit_ip": env_int(env, "ONSALE_JOIN_LIMIT_IP", 600, 1, 10**9),
        "join_limit_account": env_int(env, "ONSALE_JOIN_LIMIT_ACCOUNT", 30, 1, 10**9),
        "poll_limit_ip": env_int(env, "ONSALE_POLL_LIMIT_IP", 6000, 1, 10**9),
        "poll_limit_account": env_int(env, "ONSALE_POLL_LIMIT_ACCOUNT", 120, 1, 10**9),
        "draw_limit_ip": env_int(env, "ONSALE_DRAW_LIMIT_IP", 120, 1, 10**9),
        "draw_page_max": env_int(env, "ONSALE_DRAW_PAGE_MAX", 10_000, 1, 100_000),
        "draw_cache_mb": env_int(env, "ONSALE_DRAW_CACHE_MB", 64, 1, 65_536),
        "target_hold_p99_ms": _float(env, "ONSALE_TARGET_HOLD_P99_MS", 300.0),
        "target_lock_wait_p99_ms": _float(env, "ONSALE_TARGET_LOCK_WAIT_P99_MS", 100.0),
        "target_conflict_rate": _share(env, "ONSALE_TARGET_CONFLICT_RATE", 0.6),
        "target_payment_error_rate": _share(env, "ONSALE_TARGET_PAYMENT_ERROR_RATE", 0.05),
        "target_completion_floor": _share(env, "ONSALE_TARGET_COMPLETION_FLOOR", 0.0,
                                          zero=True),
        "target_active_headroom": _share(env, "ONSALE_TARGET_ACTIVE_HEADROOM", 0.9),
    }


def security_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """Origins allowed to post and the operator-token throttle
    (docs/configuration.md#security)."""
    origins = []
    for raw in (env.get("ONSALE_ALLOWED_ORIGINS") or "").split(","):
        if not raw.strip():
            continue
        origin = parse_origin(raw)
        if origin is None:
            raise ConfigError("every ONSALE_ALLOWED_ORIGINS entry must be an origin like "
                              f"https://shop.example or http://127.0.0.1:8000, got {raw.strip()!r}")
        origins.append(origin)
    return {
        "allowed_origins": tuple(dict.fromkeys(origins)),
        "admin_limit_failures": env_int(env, "ONSALE_ADMIN_LIMIT_FAILURES", 10, 1, 10**6),
        "admin_limit_window_seconds": env_int(env, "ONSALE_ADMIN_LIMIT_WINDOW_SECONDS", 60,
                                              1, 86400),
    }


def session_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """The session store's timeout, sign-in throttling and the password-hashing
    pool (docs/configuration.md#sessions-and-sign-in)."""
    lockout = env_int(env, "ONSALE_SIGNIN_LOCKOUT_SECONDS", 30, 1, 86400)
    lockout_max = env_int(env, "ONSALE_SIGNIN_LOCKOUT_MAX_SECONDS", 900, 1, 7 * 86400)
    if lockout_max < lockout:
        raise ConfigError("ONSALE_SIGNIN_LOCKOUT_MAX_SECONDS must be at least "
                          "ONSALE_SIGNIN_LOCKOUT_SECONDS")
    timeout = _float(env, "ONSALE_SESSION_STORE_TIMEOUT", 0.5)
    if timeout > 10:
        raise ConfigError("ONSALE_SESSION_STORE_TIMEOUT must be at most 10 seconds")
    return {
        "session_store_timeout": timeout,
        "signin_window_seconds": env_int(env, "ONSALE_SIGNIN_WINDOW_SECONDS", 60, 1, 86400),
        "signin_limit_ip": env_int(env, "ONSALE_SIGNIN_LIMIT_IP", 60, 1, 10**9),
        "signin_limit_email": env_int(env, "ONSALE_SIGNIN_LIMIT_EMAIL", 10, 1, 10**9),
        "signin_lockout_after": env_int(env, "ONSALE_SIGNIN_LOCKOUT_AFTER", 5, 1, 1000),
        "signin_lockout_seconds": lockout,
        "signin_lockout_max_seconds": lockout_max,
        "password_workers": env_int(env, "ONSALE_PASSWORD_WORKERS", 2, 1, 64),
        "password_queue": env_int(env, "ONSALE_PASSWORD_QUEUE", 16, 0, 10_000),
    }


def dependency_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """Request-path bounds, the circuit breakers' back-off and the simulator guard
    (docs/configuration.md#dependencies)."""
    redis_timeout = _float(env, "ONSALE_REDIS_TIMEOUT", 0.25)
    pool_wait = _float(env, "ONSALE_REDIS_POOL_WAIT", 0.5)
    if redis_timeout > 10 or pool_wait > 10:
        raise ConfigError("ONSALE_REDIS_TIMEOUT and ONSALE_REDIS_POOL_WAIT must be at most "
                          "10 seconds")
    backoff = _float(env, "ONSALE_DEPENDENCY_BACKOFF", 0.5)
    backoff_max = _float(env, "ONSALE_DEPENDENCY_BACKOFF_MAX", 2.0)
    if backoff > 60 or backoff_max > 300:
        raise ConfigError("ONSALE_DEPENDENCY_BACKOFF must be at most 60 seconds and "
                          "ONSALE_DEPENDENCY_BACKOFF_MAX at most 300")
    if backoff_max < backoff:
        raise ConfigError("ONSALE_DEPENDENCY_BACKOFF_MAX must be at least "
                          "ONSALE_DEPENDENCY_BACKOFF")
    return {
        "db_request_timeout_ms": env_int(env, "ONSALE_DB_REQUEST_TIMEOUT_MS", 500, 10, 60_000),
        "redis_timeout": redis_timeout,
        "redis_pool_wait": pool_wait,
        "dependency_backoff": backoff,
        "dependency_backoff_max": backoff_max,
        "allow_simulator": _bool(env, "ONSALE_ALLOW_SIMULATOR", False),
    }


# Test-only hooks: the process kills itself (SIGKILL) at this point.
CRASH_POINTS = ("after_checkout_commit", "after_authorize_sent", "after_sale_commit",
                "after_capture_sent", "before_outbox_publish", "after_outbox_publish")
