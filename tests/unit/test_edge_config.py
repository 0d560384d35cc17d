"""The waiting-room settings (kernel.config_waiting_room)."""

from __future__ import annotations

import pytest

from onsale.kernel.config import ConfigError, Settings

BASE = {"DATABASE_URL": "postgresql://x/y", "ONSALE_SECRET_KEY": "s" * 16,
        "ONSALE_ADMIN_TOKEN": "a" * 16}


def test_defaults() -> None:
    s = Settings.from_env(BASE)
    assert (s.admission_keys, s.admission_ttl_seconds, s.queue_poll_seconds) == ("", 600, 5)
    assert (s.queue_abandon_seconds, s.admission_claim_seconds, s.shopper_idle_seconds) == (
        300, 120, 600)
    assert s.admitter_interval == 0.25
    assert (s.join_limit_ip, s.join_limit_account, s.poll_limit_ip, s.poll_limit_account) == (
        600, 30, 6000, 120)


def test_values_are_read_and_checked() -> None:
    s = Settings.from_env({**BASE, "ONSALE_ADMISSION_KEYS": "k" * 16 + ",old-key-0123456789",
                           "ONSALE_QUEUE_POLL_SECONDS": "10", "ONSALE_ADMITTER_INTERVAL": "0.5"})
    assert s.admission_keys.split(",")[1] == "old-key-0123456789"
    assert (s.queue_poll_seconds, s.admitter_interval) == (10, 0.5)
    for bad in ({"ONSALE_ADMISSION_KEYS": "short"}, {"ONSALE_ADMISSION_TTL_SECONDS": "5"},
                {"ONSALE_QUEUE_POLL_SECONDS": "61"}, {"ONSALE_ADMITTER_INTERVAL": "0"},
                {"ONSALE_JOIN_LIMIT_IP": "0"}):
        with pytest.raises(ConfigError):
            Settings.from_env({**BASE, **bad})


def test_a_polling_visitor_can_never_be_dropped() -> None:
    with pytest.raises(ConfigError, match="half"):
        Settings.from_env({**BASE, "ONSALE_QUEUE_ABANDON_SECONDS": "10",
                           "ONSALE_QUEUE_POLL_SECONDS": "6"})


def test_controller_targets_are_settings() -> None:
    from onsale.edge.admitter import targets_from
    from onsale.edge.controller import Targets

    assert targets_from(Settings.from_env(BASE)) == Targets()
    s = Settings.from_env({**BASE, "ONSALE_TARGET_HOLD_P99_MS": "150",
                           "ONSALE_TARGET_CONFLICT_RATE": "0.3",
                           "ONSALE_TARGET_COMPLETION_FLOOR": "0"})
    t = targets_from(s)
    assert (t.hold_p99_ms, t.conflict_rate, t.completion_floor) == (150.0, 0.3, 0.0)
    for bad in ({"ONSALE_TARGET_CONFLICT_RATE": "0"}, {"ONSALE_TARGET_CONFLICT_RATE": "1.5"},
                {"ONSALE_TARGET_ACTIVE_HEADROOM": "x"}, {"ONSALE_TARGET_HOLD_P99_MS": "-1"},
                {"ONSALE_TARGET_COMPLETION_FLOOR": "-0.1"}):
        with pytest.raises(ConfigError):
            Settings.from_env({**BASE, **bad})
