"""psp.config: PspConfig.from_env and its one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from onsale.kernel.settings import ConfigError
from onsale.psp.config import PspConfig

KEY = "sk_test_0123456789abcdef"
SECRET_KEY_MESSAGE = "ONSALE_PSP_SECRET_KEY must start with sk_ and be at least 16 characters"


def test_defaults() -> None:
    config = PspConfig.from_env({"ONSALE_PSP_API_KEY": KEY})
    assert config == PspConfig(secret_key=KEY)
    assert config.data_dir == Path(".onsale/psp")
    assert config.webhook_url is None
    assert config.public_url == "http://127.0.0.1:8100"
    assert (config.auth_window_seconds, config.idempotency_retention_seconds,
            config.webhook_max_attempts) == (604800, 86400, 12)
    assert config.database == Path(".onsale/psp/psp.sqlite3")
    assert config.publishable_key.startswith("pk_test_") and KEY[8:] not in config.publishable_key
    assert config.sim_key is None


def test_the_four_keys() -> None:
    config = PspConfig.from_env({
        "ONSALE_PSP_SECRET_KEY": KEY, "ONSALE_PSP_API_KEY": "sk_ignored_0123456789",
        "ONSALE_PSP_PUBLISHABLE_KEY": "pk_test_0123456789abcdef",
        "ONSALE_PSP_SIM_KEY": "sim_0123456789abcdef", "ONSALE_PSP_WEBHOOK_SECRET": "whsec_x"})
    assert (config.secret_key, config.publishable_key, config.sim_key, config.webhook_secret) \
        == (KEY, "pk_test_0123456789abcdef", "sim_0123456789abcdef", "whsec_x")


def test_everything_set() -> None:
    config = PspConfig.from_env({
        "ONSALE_PSP_API_KEY": KEY, "ONSALE_PSP_WEBHOOK_URL": "http://core.test/hooks",
        "ONSALE_PSP_WEBHOOK_SECRET": "whsec_1", "ONSALE_PSP_DATA_DIR": "/tmp/x",
        "ONSALE_PSP_AUTH_WINDOW_SECONDS": "2", "ONSALE_PSP_IDEMPOTENCY_RETENTION_SECONDS": "60",
        "ONSALE_PSP_WEBHOOK_MAX_ATTEMPTS": "3", "ONSALE_PSP_PUBLIC_URL": "https://psp.test/",
    }, port=9000)
    assert (config.webhook_url, config.webhook_secret, config.data_dir) == (
        "http://core.test/hooks", "whsec_1", Path("/tmp/x"))
    assert (config.auth_window_seconds, config.idempotency_retention_seconds,
            config.webhook_max_attempts) == (2, 60, 3)
    assert config.public_url == "https://psp.test"


def test_port_sets_the_default_public_url_and_the_flag_wins_for_the_data_dir() -> None:
    config = PspConfig.from_env({"ONSALE_PSP_API_KEY": KEY, "ONSALE_PSP_DATA_DIR": "/env"},
                                port=9001, data_dir="/flag")
    assert config.public_url == "http://127.0.0.1:9001"
    assert config.data_dir == Path("/flag")


@pytest.mark.parametrize("env, message", [
    ({"ONSALE_PSP_API_KEY": ""}, SECRET_KEY_MESSAGE),
    ({"ONSALE_PSP_API_KEY": "sk_short"}, SECRET_KEY_MESSAGE),
    ({"ONSALE_PSP_API_KEY": "", "ONSALE_PSP_SECRET_KEY": "pk_test_0123456789abcdef"},
     SECRET_KEY_MESSAGE),
    ({"ONSALE_PSP_PUBLISHABLE_KEY": "sk_test_0123456789abcdef"},
     "ONSALE_PSP_PUBLISHABLE_KEY must start with pk_ and be at least 16 characters"),
    ({"ONSALE_PSP_SIM_KEY": "short"}, "ONSALE_PSP_SIM_KEY must be at least 16 characters"),
    ({"ONSALE_PSP_SIM_KEY": KEY}, "ONSALE_PSP_SIM_KEY must differ from the API keys"),
    ({"ONSALE_PSP_WEBHOOK_SECRET": "secret_0123456789"},
     "ONSALE_PSP_WEBHOOK_SECRET must start with whsec_"),
    ({"ONSALE_PSP_WEBHOOK_URL": "http://core.test/h"},
     "ONSALE_PSP_WEBHOOK_SECRET is required when ONSALE_PSP_WEBHOOK_URL is set"),
    ({"ONSALE_PSP_WEBHOOK_URL": "core.test/h", "ONSALE_PSP_WEBHOOK_SECRET": "whsec_s"},
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
    with pytest.raises(ConfigError) as caught:
        PspConfig.from_env({"ONSALE_PSP_API_KEY": KEY, **env})
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)


def test_direct_construction_is_checked_too() -> None:
    with pytest.raises(ConfigError):
        PspConfig(secret_key=KEY, sweep_interval=0)
    with pytest.raises(ConfigError):
        PspConfig(secret_key=KEY, webhook_max_attempts=0)
