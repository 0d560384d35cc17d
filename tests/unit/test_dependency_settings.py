"""kernel.config.DependencySettings: the request-path bounds, back-off and simulator guard."""

from __future__ import annotations

import pytest

from onsale.kernel.config import ConfigError, Settings

BASE = {
    "DATABASE_URL": "postgresql://user@db.example/onsale",
    "ONSALE_SECRET_KEY": "s" * 16,
    "ONSALE_ADMIN_TOKEN": "a" * 16,
}


def test_defaults() -> None:
    s = Settings.from_env(dict(BASE))
    assert (s.db_acquire_timeout, s.db_request_timeout_ms, s.db_statement_timeout_ms) == (
        0.5, 500, 5000)
    assert (s.redis_timeout, s.redis_pool_wait) == (0.25, 0.5)
    assert (s.dependency_backoff, s.dependency_backoff_max) == (0.5, 2.0)
    assert s.allow_simulator is False


def test_every_value_is_read() -> None:
    s = Settings.from_env({**BASE, "ONSALE_DB_REQUEST_TIMEOUT_MS": "800",
                           "ONSALE_REDIS_TIMEOUT": "0.1", "ONSALE_REDIS_POOL_WAIT": "1.5",
                           "ONSALE_DEPENDENCY_BACKOFF": "1",
                           "ONSALE_DEPENDENCY_BACKOFF_MAX": "8",
                           "ONSALE_ALLOW_SIMULATOR": "true"})
    assert (s.db_request_timeout_ms, s.redis_timeout, s.redis_pool_wait) == (800, 0.1, 1.5)
    assert (s.dependency_backoff, s.dependency_backoff_max) == (1.0, 8.0)
    assert s.allow_simulator is True


@pytest.mark.parametrize(("name", "value", "mention"), [
    ("ONSALE_DB_REQUEST_TIMEOUT_MS", "5", "ONSALE_DB_REQUEST_TIMEOUT_MS"),
    ("ONSALE_REDIS_TIMEOUT", "0", "ONSALE_REDIS_TIMEOUT"),
    ("ONSALE_REDIS_TIMEOUT", "30", "ONSALE_REDIS_TIMEOUT"),
    ("ONSALE_REDIS_POOL_WAIT", "-1", "ONSALE_REDIS_POOL_WAIT"),
    ("ONSALE_DEPENDENCY_BACKOFF", "nan", "ONSALE_DEPENDENCY_BACKOFF"),
    ("ONSALE_DEPENDENCY_BACKOFF_MAX", "0.1", "ONSALE_DEPENDENCY_BACKOFF_MAX"),
    ("ONSALE_ALLOW_SIMULATOR", "maybe", "ONSALE_ALLOW_SIMULATOR"),
])
def test_bad_values_stop_startup(name: str, value: str, mention: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({**BASE, name: value})
    assert mention in str(info.value)
