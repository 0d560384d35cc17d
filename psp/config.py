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
from typing import ClassVar

from onsale.kernel.settings import ConfigError, Section, read, setting

DEFAULT_PORT = 8100
DEFAULT_DATA_DIR = Path(".onsale/psp")


def _text(name: str, raw: str) -> str:
    return raw.strip()


def _url(name: str, raw: str) -> str | None:
    return raw.strip().rstrip("/") or None


@dataclass(frozen=True)
class PspConfig(Section):
    ENV_PREFIX: ClassVar[str] = "ONSALE_PSP_"

    secret_key: str = setting(
        "", "The secret key: `Authorization: Bearer sk_…` on every `/v1` route (compared in "
        "constant time). Idempotency keys are scoped to it. Core's "
        "`ONSALE_STRIPE_SECRET_KEY`. The old name `ONSALE_PSP_API_KEY` is still read when "
        "this one is unset.", parse=_text, aliases=("ONSALE_PSP_API_KEY",),
        default_doc="none; required", range_doc="`sk_…`, at least 16 characters")
    publishable_key: str = setting(
        "", "Accepted only on `POST /v1/payment_methods` (tokenization), as a Bearer token or "
        "as Stripe.js sends it, the `key` form parameter. Anywhere else: 401 "
        "`secret_key_required`. Core's `ONSALE_STRIPE_PUBLISHABLE_KEY`.", parse=_text,
        default_doc="derived from the secret key (`pk_test_` + a digest, revealing nothing "
        "of it)", range_doc="`pk_…`, at least 16 characters")
    sim_key: str | None = setting(
        None, "The fault-injection key: `Authorization: Bearer <sim key>` on `/_sim/*`, and "
        "only there (the API keys are refused on `/_sim/*`; this key is no API key on "
        "`/v1`).", parse=lambda name, raw: raw.strip() or None,
        default_doc="unset: every `/_sim/*` route answers 401",
        range_doc="at least 16 characters, different from both API keys")
    webhook_url: str | None = setting(
        None, "Where events are POSTed. When unset no event is even queued.", parse=_url,
        default_doc="unset: no webhooks", range_doc="absolute `http(s)://` URL")
    webhook_secret: str = setting(
        "", "The HMAC key of the `Stripe-Signature` header. Core's "
        "`ONSALE_STRIPE_WEBHOOK_SECRET`.", default_doc="none; required when the URL is set",
        range_doc="`whsec_…`")
    data_dir: Path = setting(
        DEFAULT_DATA_DIR, "Holds `psp.sqlite3` (+ `-wal`, `-shm`), mode 0600 "
        "([persistence](#persistence)). `--data-dir` wins over it.",
        range_doc="a directory (created 0700)")
    auth_window_seconds: int = setting(
        7 * 86400, "How long an authorization (`requires_capture`) lives before it lapses to "
        "`canceled` / `automatic`.", lo=1, hi=366 * 86400, unit="s",
        default_doc="`604800` (7 days)")
    idempotency_retention_seconds: int = setting(
        86400, "How long an idempotency key is remembered; also how long finished webhook "
        "rows are kept for `/_sim/webhooks`.", lo=1, hi=366 * 86400, unit="s")
    webhook_max_attempts: int = setting(
        12, "Delivery attempts per event before it is marked `failed`.", lo=1, hi=100)
    public_url: str = setting(
        f"http://127.0.0.1:{DEFAULT_PORT}", "Base of the 3-D Secure links in `next_action` "
        "(what the shopper's browser can reach).",
        parse=lambda name, raw: raw.strip().rstrip("/"),
        default_doc="`http://127.0.0.1:<port>`", range_doc="absolute `http(s)://` URL")
    metrics_host: str = setting(
        "127.0.0.1", "Where `/metrics` (and `/healthz`) answer when `ONSALE_PSP_METRICS_PORT` "
        "is set ([metrics](#metrics)).")
    metrics_port: int = setting(
        0, "A second port for `/metrics` and `/healthz`; 0: none (the simulator is a test "
        "tool; set it to scrape one under load).", lo=0, hi=65535)
    # Not from the environment: knobs for tests and benchmarks.
    webhook_timeout: float = 5.0
    webhook_backoff_base: float = 1.0
    webhook_backoff_cap: float = 60.0
    sweep_interval: float = 1.0

    def check(self) -> None:
        if len(self.secret_key) < 16 or not self.secret_key.startswith("sk_"):
            raise ConfigError("ONSALE_PSP_SECRET_KEY must start with sk_ and be at least "
                                 "16 characters")
        if not self.publishable_key:
            object.__setattr__(self, "publishable_key", publishable_for(self.secret_key))
        if len(self.publishable_key) < 16 or not self.publishable_key.startswith("pk_"):
            raise ConfigError("ONSALE_PSP_PUBLISHABLE_KEY must start with pk_ and be at "
                                 "least 16 characters")
        if self.sim_key is not None:
            if len(self.sim_key) < 16:
                raise ConfigError("ONSALE_PSP_SIM_KEY must be at least 16 characters")
            if self.sim_key in (self.secret_key, self.publishable_key):
                raise ConfigError("ONSALE_PSP_SIM_KEY must differ from the API keys")
        if self.webhook_secret and not self.webhook_secret.startswith("whsec_"):
            raise ConfigError("ONSALE_PSP_WEBHOOK_SECRET must start with whsec_")
        if self.webhook_url is not None:
            _check_url("ONSALE_PSP_WEBHOOK_URL", self.webhook_url)
            if not self.webhook_secret:
                raise ConfigError(
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
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        if self.webhook_max_attempts < 1:
            raise ConfigError("ONSALE_PSP_WEBHOOK_MAX_ATTEMPTS must be at least 1")

    @property
    def database(self) -> Path:
        return self.data_dir / "psp.sqlite3"

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, port: int = DEFAULT_PORT,
                 data_dir: str | Path | None = None) -> PspConfig:
        """Settings from ``env``; ``port`` only sets the default public URL and
        ``data_dir`` (the CLI flag) wins over ``ONSALE_PSP_DATA_DIR``."""
        values = read(cls, env)
        values.setdefault("public_url", f"http://127.0.0.1:{port}")
        if data_dir is not None:
            values["data_dir"] = Path(data_dir)
        return cls(**values)


def publishable_for(secret_key: str) -> str:
    """The publishable key paired with a secret key when none is configured: a digest,
    so a page that shows it reveals nothing of the secret."""
    return "pk_test_" + hashlib.sha256(b"onsale-psp-publishable\0" + secret_key.encode()
                                       ).hexdigest()[:32]


def _check_url(name: str, url: str) -> None:
    if not url.startswith(("http://", "https://")) or len(url.split("://", 1)[1]) == 0:
        raise ConfigError(f"{name} must be an absolute http(s) URL, got {url!r}")
