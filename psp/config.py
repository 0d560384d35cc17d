"""Simulator settings from ``ONSALE_PSP_*`` environment variables (docs/psp.md).

Four keys, as a Stripe account has: the secret key ``sk_…`` (the API; the old name
``ONSALE_PSP_API_KEY`` is still read when ``ONSALE_PSP_SECRET_KEY`` is unset), the
publishable key ``pk_…`` (tokenization only), the webhook signing secret ``whsec_…``,
and, the simulator's own, the fault-injection key for ``/_sim/*``."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PORT = 8100


class PspConfigError(ValueError):
    """A bad setting; the message is one line, fit for the terminal."""


@dataclass(frozen=True, slots=True)
class PspConfig:
    secret_key: str
    publishable_key: str = ""  # "": derived from the secret key (see publishable_for)
    sim_key: str | None = None  # None: the /_sim/ endpoints answer 401 to everyone
    data_dir: Path = Path(".onsale/psp")
    webhook_url: str | None = None
    webhook_secret: str = ""
    public_url: str = f"http://127.0.0.1:{DEFAULT_PORT}"
    auth_window_seconds: float = 7 * 86400
    idempotency_retention_seconds: float = 86400
    webhook_max_attempts: int = 12
    # Not from the environment: knobs for tests and benchmarks.
    webhook_timeout: float = 5.0
    webhook_backoff_base: float = 1.0
    webhook_backoff_cap: float = 60.0
    sweep_interval: float = 1.0

    def __post_init__(self) -> None:
        if len(self.secret_key) < 16 or not self.secret_key.startswith("sk_"):
            raise PspConfigError("ONSALE_PSP_SECRET_KEY must start with sk_ and be at least "
                                 "16 characters")
        if not self.publishable_key:
            object.__setattr__(self, "publishable_key", publishable_for(self.secret_key))
        if len(self.publishable_key) < 16 or not self.publishable_key.startswith("pk_"):
            raise PspConfigError("ONSALE_PSP_PUBLISHABLE_KEY must start with pk_ and be at "
                                 "least 16 characters")
        if self.sim_key is not None:
            if len(self.sim_key) < 16:
                raise PspConfigError("ONSALE_PSP_SIM_KEY must be at least 16 characters")
            if self.sim_key in (self.secret_key, self.publishable_key):
                raise PspConfigError("ONSALE_PSP_SIM_KEY must differ from the API keys")
        if self.webhook_secret and not self.webhook_secret.startswith("whsec_"):
            raise PspConfigError("ONSALE_PSP_WEBHOOK_SECRET must start with whsec_")
        if self.webhook_url is not None:
            _check_url("ONSALE_PSP_WEBHOOK_URL", self.webhook_url)
            if not self.webhook_secret:
                raise PspConfigError(
                    "ONSALE_PSP_WEBHOOK_SECRET is required when ONSALE_PSP_WEBHOOK_URL is set")
        _check_url("ONSALE_PSP_PUBLIC_URL", self.public_url)
        for name, value in (("auth_window_seconds", self.auth_window_seconds),
                            ("idempotency_retention_seconds",
                             self.idempotency_retention_seconds),
                            ("webhook_timeout", self.webhook_timeout),
                            ("webhook_backoff_base", self.webhook_backoff_base),
                            ("webhook_backoff_cap", self.webhook_backoff_cap),
                            ("sweep_interval", self.sweep_interval)):
            if not math.isfinite(value) or value <= 0:
                raise PspConfigError(f"{name} must be a positive number, got {value!r}")
        if self.webhook_max_attempts < 1:
            raise PspConfigError("ONSALE_PSP_WEBHOOK_MAX_ATTEMPTS must be at least 1")

    @property
    def database(self) -> Path:
        return self.data_dir / "psp.sqlite3"

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, port: int = DEFAULT_PORT,
                 data_dir: str | Path | None = None) -> PspConfig:
        """Settings from ``env``; ``port`` only sets the default public URL and
        ``data_dir`` (the CLI flag) wins over ``ONSALE_PSP_DATA_DIR``."""
        webhook_url = (env.get("ONSALE_PSP_WEBHOOK_URL") or "").strip() or None
        public_url = (env.get("ONSALE_PSP_PUBLIC_URL") or "").strip() \
            or f"http://127.0.0.1:{port}"
        directory = data_dir if data_dir is not None else (
            env.get("ONSALE_PSP_DATA_DIR") or ".onsale/psp")
        return cls(
            secret_key=(env.get("ONSALE_PSP_SECRET_KEY") or env.get("ONSALE_PSP_API_KEY")
                        or "").strip(),
            publishable_key=(env.get("ONSALE_PSP_PUBLISHABLE_KEY") or "").strip(),
            sim_key=(env.get("ONSALE_PSP_SIM_KEY") or "").strip() or None,
            data_dir=Path(directory),
            webhook_url=webhook_url,
            webhook_secret=env.get("ONSALE_PSP_WEBHOOK_SECRET", ""),
            public_url=public_url.rstrip("/"),
            auth_window_seconds=_int(env, "ONSALE_PSP_AUTH_WINDOW_SECONDS", 604800,
                                     1, 366 * 86400),
            idempotency_retention_seconds=_int(env, "ONSALE_PSP_IDEMPOTENCY_RETENTION_SECONDS",
                                               86400, 1, 366 * 86400),
            webhook_max_attempts=_int(env, "ONSALE_PSP_WEBHOOK_MAX_ATTEMPTS", 12, 1, 100),
        )


def publishable_for(secret_key: str) -> str:
    """The publishable key paired with a secret key when none is configured: a digest,
    so a page that shows it reveals nothing of the secret."""
    return "pk_test_" + hashlib.sha256(b"onsale-psp-publishable\0" + secret_key.encode()
                                       ).hexdigest()[:32]


def _int(env: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise PspConfigError(f"{name} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise PspConfigError(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def _check_url(name: str, url: str) -> None:
    if not url.startswith(("http://", "https://")) or len(url.split("://", 1)[1]) == 0:
        raise PspConfigError(f"{name} must be an absolute http(s) URL, got {url!r}")
