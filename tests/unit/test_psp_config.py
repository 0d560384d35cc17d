"""psp.config: PspConfig.from_env and its one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from onsale.psp.config import PspConfig, PspConfigError

KEY = "sk_test_0123456789abcdef"


def test_defaults() -> None:
    config = PspConfig.from_env({"ONSALE_PSP_API_KEY": KEY})
    assert config == PspConfig(api_key=KEY)
    assert config.data_dir == Path(".onsale/psp")
    assert config.webhook_url is None
    assert config.public_url == "http://127.0.0.1:8100"
    assert (config.auth_window_seconds, config.idempotency_retention_seconds,
            config.webhook_max_attempts) == (604800, 86400, 12)
    assert config.database == Path(".onsale/psp/psp.sqlite3")


def test_everything_set() -> None:
    config = PspConfig.from_env({
        "ONSALE_PSP_API_KEY": KEY, "ONSALE_PSP_WEBHOOK_URL": "http://core.test/hooks",
        "ONSALE_PSP_WEBHOOK_SECRET": "whsec", "ONSALE_PSP_DATA_DIR": "/tmp/x",
        "ONSALE_PSP_AUTH_WINDOW_SECONDS": "2", "ONSALE_PSP_IDEMPOTENCY_RETENTION_SECONDS": "60",
        "ONSALE_PSP_WEBHOOK_MAX_ATTEMPTS": "3", "ONSALE_PSP_PUBLIC_URL": "https://psp.test/",
    }, port=9000)
    assert (config.webhook_url, config.webhook_secret, config.data_dir) == (
        "http://core.test/hooks", "whsec", Path("/tmp/x"))
    assert (config.auth_window_seconds, config.idempotency_retention_seconds,
            config.webhook_max_attempts) == (2, 60, 3)
    assert config.public_url == "https://psp.test"


def test_port_sets_the_default_public_url_and_the_flag_wins_for_the_data_dir() -> None:
    config = PspConfig.from_env({"ONSALE_PSP_API_KEY": KEY, "ONSALE_PSP_DATA_DIR": "/env"},
                                port=9001, data_dir="/flag")
    assert config.public_url == "http://127.0.0.1:9001"
    assert config.data_dir == Path("/flag")


@pytest.mark.parametrize("env, message", [
    ({"ONSALE_PSP_API_KEY": ""}, "ONSALE_PSP_API_KEY must be at least 16 characters"),
    ({"ONSALE_PSP_API_KEY": "short"}, "ONSALE_PSP_API_KEY must be at least 16 characters"),
    ({"ONSALE_PSP_WEBHOOK_URL": "http://core.test/h"},
     "ONSALE_PSP_WEBHOOK_SECRET is required when ONSALE_PSP_WEBHOOK_URL is set"),
    ({"ONSALE_PSP_WEBHOOK_URL": "core.test/h", "ONSALE_PSP_WEBHOOK_SECRET": "s"},
     "ONSALE_PSP_WEBHOOK_URL must be an absolute http(s) URL, got 'core.test/h'"),
    ({"ONSALE_PSP_PUBLIC_URL": "ftp://x"},
     "ONSALE_PSP_PUBLIC_URL must be an absolute http(s) URL, got 'ftp://x'"),
    ({"ONSALE_PSP_AUTH_WINDOW_SECONDS": "soon"},
     "ONSALE_PSP_AUTH_WINDOW_SECONDS must be an integer, got 'soon'"),
    ({"ONSALE_PSP_AUTH_WINDOW_SECONDS": "0"},
     "ONSALE_PSP_AUTH_WINDOW_SECONDS must be between 1 and 31622400, got 0"),
    ({"ONSALE_PSP_WEBHOOK_MAX_ATTEMPTS": "101"},
     "ONSALE_PSP_WEBHOOK_MAX_ATTEMPTS must be between 1 and 100, got 101"),
    ({"ONSALE_PSP_IDEMPOTENCY_RETENTION_SECONDS": "-1"},
     "ONSALE_PSP_IDEMPOTENCY_RETENTION_SECONDS must be between 1 and 31622400, got -1"),
])
def test_bad_values(env: dict[str, str], message: str) -> None:
    with pytest.raises(PspConfigError) as caught:
        PspConfig.from_env({"ONSALE_PSP_API_KEY": KEY, **env})
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)


def test_direct_construction_is_checked_too() -> None:
    with pytest.raises(PspConfigError):
        PspConfig(api_key=KEY, sweep_interval=0)
    with pytest.raises(PspConfigError):
        PspConfig(api_key=KEY, webhook_max_attempts=0)
