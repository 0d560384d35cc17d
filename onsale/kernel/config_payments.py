"""The payment provider and the checkout timings (docs/configuration.md#payments)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from onsale.kernel.settings import ConfigError, Section, setting

STRIPE_API = "https://api.stripe.com"

# Test-only hooks: the process kills itself (SIGKILL) at this point.
CRASH_POINTS = ("after_checkout_commit", "after_authorize_sent", "after_sale_commit",
                "after_capture_sent", "before_outbox_publish", "after_outbox_publish")


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


def http_url(name: str, raw: str) -> str:
    """An http(s) URL without its trailing ``/``."""
    url = raw.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{name} must be an http(s) URL, got {url!r}")
    return url


@dataclass(frozen=True)
class PaymentSettings(Section):
    stripe_api_base: str = setting(
        STRIPE_API,
        "Where the SDK sends every call (`POST /v1/payment_intents`, `…/capture`, "
        "`…/cancel`, `GET /v1/payment_intents/{id}`, `…/search`), with the secret key, and "
        "where the checkout page tokenizes the card (`POST /v1/payment_methods`); while "
        "payments are configured its origin is in the pages' CSP `connect-src` "
        "([security](#security)). Leave it unset for Stripe; `onsale dev` and the tests "
        "point it at the simulator on `http://127.0.0.1`. A simulator on another host needs "
        "`https://` in front of it ([deployment.md](deployment.md#docker-compose)). "
        "A bad value: `ONSALE_STRIPE_API_BASE must be https:// (got 'http://psp:8000'): "
        "plain http is accepted only on a loopback host …`",
        parse=lambda name, raw: raw.rstrip("/"),
        range_doc="an `https://` URL; plain `http://` only on a loopback host "
        "(`127.0.0.0/8`, `[::1]`, exactly `localhost`: a simulator on the same machine), "
        "except under `onsale dev`, which accepts any `http://` host. A trailing `/` is "
        "dropped. Checked even while payments are off")
    stripe_secret_key: str = setting(
        "",
        "The server's key, sent by the SDK on every call core and the reconciler make. A key "
        "the provider refuses (401/403) makes the outcome `UNKNOWN`, not a failure. Never "
        "sent to a browser.",
        default_doc="unset (payments off)",
        range_doc="`sk_…` or a restricted key `rk_…`, at least 16 characters")
    stripe_publishable_key: str = setting(
        "",
        "The key the checkout page sends to the provider to tokenize the card in the "
        "browser (public by design: it is in the page).",
        default_doc="none; required when the secret key is set", range_doc="`pk_…`")
    stripe_webhook_secret: str = setting(
        "",
        "The webhook endpoint's signing secret: `POST /api/webhooks/payments` accepts an "
        "event only if its `Stripe-Signature` verifies under it (the SDK's check, 300 s "
        "tolerance; [api.md](api.md#post-apiwebhookspayments--provider-events)).",
        default_doc="none; required when the secret key is set", range_doc="`whsec_…`")
    stripe_timeout: float = setting(
        10.0,
        "The timeout of the SDK's HTTP client on each provider call; the SDK's own retries "
        "are off (`max_network_retries=0`). A call that times out counts as `UNKNOWN`: the "
        "seats stay PAYMENT_PENDING until a webhook or the reconciler settles it. A checkout "
        "request may wait up to this twice (authorization, then capture).",
        positive=True, unit="s")
    payment_grace_seconds: int = setting(
        600,
        "The one-time payment grace. The first checkout of a hold moves it and its seats to "
        "PAYMENT_PENDING until `expires_at +` this (`holds.grace_until`, shown as "
        "`payment_deadline`), set once and never extended; a retry after a decline reuses "
        "it. Past it, the reconciler releases the seats of an authorization the provider "
        "never received and voids a 3-D Secure still pending. Read by core at checkout; the "
        "deadline is then stored on the hold.",
        lo=0, hi=86400, unit="s", default_doc="`600` (10 min)")
    checkout_min_remaining_seconds: int = setting(
        15,
        "A checkout is refused with `409 hold_expiring` when less than this is left before "
        "the hold's `expires_at` (database time), so a payment is not started on a hold "
        "about to lapse. `0` refuses only holds already past their deadline "
        "(`409 hold_expired`). Core.",
        lo=0, hi=3600, unit="s")
    payment_first_check_seconds: int = setting(
        30,
        "When the reconciler first looks at a new authorization: `next_check_at = now() + "
        "this` at checkout, so the request that created it has time to finish. Core.",
        lo=0, hi=3600, unit="s")
    payment_retry_seconds: int = setting(
        5,
        "When an open operation is looked at again: after an `UNKNOWN` or `REQUIRES_ACTION` "
        "answer, after a reconciler look-up that found nothing yet (or failed); also when a "
        "new capture or void first becomes due for the reconciler (the process that created "
        "it sends it at once). Core and worker.",
        lo=1, hi=3600, unit="s")
    reconcile_interval: float = setting(
        1.0,
        "Pause after each reconciler pass. A pass leases up to 100 due operations and "
        "repeats at once while it gets full batches. Worker and `onsale dev`.",
        positive=True, unit="s")
    public_url: str = setting(
        "http://127.0.0.1:8000",
        "The shop's public base URL. Each authorization asks the provider to send the "
        "shopper back to `{ONSALE_PUBLIC_URL}/orders/{order_id}` after 3-D Secure "
        "(`return_url`); the shopper app's order page answers there (core role and "
        "`onsale dev`, [web.md](web.md)). Its origin is also the one whose pages may post "
        "([security](#security)); `https://` turns on HSTS; and unless it is plain "
        "`http://` on loopback the admission and queue-ticket cookies are `Secure` and "
        "`__Host-` prefixed. Core, edge and seatmap: set the same value on all three.",
        parse=http_url,
        default_doc="`http://127.0.0.1:8000`; when unset, `onsale dev` sets "
        "`http://<--host>:<--port>`",
        range_doc="an `http://` or `https://` URL (else `ONSALE_PUBLIC_URL must be an "
        "http(s) URL, got '…'`); a trailing `/` is dropped")
    crash_at: str | None = setting(
        None,
        "Tests only: the process kills itself with SIGKILL at the named point (the "
        "points are listed below the table). Never set it in production.",
        choices=CRASH_POINTS, range_doc="one of the points below")
    # Not from the environment: `onsale dev` accepts a plain-http provider on any host.
    plain_http_provider: bool = field(default=False, repr=False)

    def check(self) -> None:
        check_api_base(self.stripe_api_base, dev=self.plain_http_provider)
        if not self.stripe_secret_key:
            return
        if not self.stripe_secret_key.startswith(("sk_", "rk_")) \
                or len(self.stripe_secret_key) < 16:
            raise ConfigError("ONSALE_STRIPE_SECRET_KEY must be a secret key (sk_… or rk_…)")
        if not self.stripe_publishable_key.startswith("pk_"):
            raise ConfigError("ONSALE_STRIPE_PUBLISHABLE_KEY must be set to a pk_… key "
                              "(the checkout page tokenizes cards with it)")
        if not self.stripe_webhook_secret.startswith("whsec_"):
            raise ConfigError("ONSALE_STRIPE_WEBHOOK_SECRET must be set to the endpoint's "
                              "signing secret (whsec_…)")

    @property
    def payments_configured(self) -> bool:
        """A provider to pay through (ONSALE_STRIPE_SECRET_KEY is set)."""
        return bool(self.stripe_secret_key)
