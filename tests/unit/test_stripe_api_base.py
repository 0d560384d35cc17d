"""ONSALE_STRIPE_API_BASE: https, or plain http only on a loopback host, except in
``onsale dev`` (onsale/kernel/config.py: check_api_base). Literal inputs."""

from __future__ import annotations

import pytest

from onsale.kernel.config import (
    ConfigError,
    Settings,
    check_api_base,
    is_loopback_api_host,
)

BASE = {"DATABASE_URL": "postgresql://x/y", "ONSALE_SECRET_KEY": "s" * 16,
        "ONSALE_ADMIN_TOKEN": "a" * 16,
        "ONSALE_STRIPE_SECRET_KEY": "sk_test_" + "k" * 16,
        "ONSALE_STRIPE_PUBLISHABLE_KEY": "pk_test_" + "p" * 16,
        "ONSALE_STRIPE_WEBHOOK_SECRET": "whsec_" + "w" * 16}


@pytest.mark.parametrize("url", [
    "https://api.stripe.com",
    "https://psp.staging.example.com",
    "https://10.0.0.5:8443",
    "http://127.0.0.1:8100",  # the tests' and onsale dev's simulator
    "http://127.8.9.10:8100",  # all of 127.0.0.0/8
    "http://localhost:8100",
    "http://LOCALHOST:8100",
    "http://[::1]:8100",
])
def test_accepted_everywhere(url: str) -> None:
    assert check_api_base(url) == url
    assert Settings.from_env({**BASE, "ONSALE_STRIPE_API_BASE": url}).stripe_api_base == url


@pytest.mark.parametrize("url", [
    "http://psp:8000",  # a Compose service name
    "http://psp.staging.example.com",
    "http://10.0.0.5:8100",
    "http://192.168.1.20",
    "http://0.0.0.0:8100",
    "http://[::ffff:127.0.0.1]:8100",  # not ::1; refused rather than guessed
    "http://api.localhost:8100",  # a resolver may send *.localhost anywhere
    "http://localhost.example.com",
    "http://127.0.0.1.nip.io",
    "http://user@evil.example/@127.0.0.1",
])
def test_plain_http_elsewhere_is_a_configuration_error(url: str) -> None:
    with pytest.raises(ConfigError, match=r"ONSALE_STRIPE_API_BASE must be https://"):
        check_api_base(url)
    # At startup: the settings every role reads (onsale serve, the app factory).
    with pytest.raises(ConfigError, match="ONSALE_STRIPE_API_BASE"):
        Settings.from_env({**BASE, "ONSALE_STRIPE_API_BASE": url})
    # Even with payments off: the setting is wrong either way.
    env = {k: v for k, v in BASE.items() if not k.startswith("ONSALE_STRIPE")}
    with pytest.raises(ConfigError, match="ONSALE_STRIPE_API_BASE"):
        Settings.from_env({**env, "ONSALE_STRIPE_API_BASE": url})


def test_onsale_dev_accepts_plain_http_anywhere() -> None:
    url = "http://psp.lan:8100"
    assert check_api_base(url, dev=True) == url
    assert Settings.from_env({**BASE, "ONSALE_STRIPE_API_BASE": url},
                             dev=True).stripe_api_base == url


@pytest.mark.parametrize("url", ["ftp://x", "api.stripe.com", "https://", "http://:8100"])
def test_not_an_http_url_is_refused_even_in_dev(url: str) -> None:
    with pytest.raises(ConfigError, match="ONSALE_STRIPE_API_BASE"):
        check_api_base(url, dev=True)


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.255.255.254", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("LocalHost", True),
    ("128.0.0.1", False), ("::2", False), ("api.localhost", False), ("localhost.", False),
    ("", False), (None, False), ("0.0.0.0", False),
])
def test_loopback_hosts(host: str | None, loopback: bool) -> None:
    assert is_loopback_api_host(host) is loopback
