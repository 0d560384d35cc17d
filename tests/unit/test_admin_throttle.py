"""kernel.admin_throttle: failed operator-token attempts per client address, with a
hand-driven clock; and require_admin's use of it (the 429, the log line)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from starlette.requests import Request

from onsale.kernel.admin_throttle import AdminThrottle
from onsale.kernel.auth import require_admin
from onsale.kernel.config import ConfigError, Settings
from onsale.kernel.problems import Problem
from onsale.kernel.process import admin_throttle

TOKEN = "admin-token-0123456789"


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_limit_locks_the_address_for_the_rest_of_the_window() -> None:
    clock = Clock()
    throttle = AdminThrottle(3, 60.0, clock=clock)
    for n in (1, 2):
        assert throttle.retry_in("198.51.100.7") == 0.0
        assert throttle.failed("198.51.100.7") == n
        clock.now += 10
    assert throttle.retry_in("198.51.100.7") == 0.0
    assert throttle.failed("198.51.100.7") == 3  # at 1020: the third within the window
    assert throttle.retry_in("198.51.100.7") == pytest.approx(40.0)  # the first, at 1000
    assert throttle.retry_in("203.0.113.9") == 0.0  # another address is not affected
    clock.now = 1059.9
    assert throttle.retry_in("198.51.100.7") == pytest.approx(0.1)
    clock.now = 1060.0  # the first failure left the window: one more attempt may be checked
    assert throttle.retry_in("198.51.100.7") == 0.0
    assert throttle.failed("198.51.100.7") == 3
    assert throttle.retry_in("198.51.100.7") == pytest.approx(10.0)  # the second, at 1010


def test_failures_age_out_and_idle_addresses_are_forgotten() -> None:
    clock = Clock()
    throttle = AdminThrottle(2, 60.0, clock=clock)
    throttle.failed("a")
    clock.now += 61
    assert throttle.failed("a") == 1  # the first one aged out
    assert throttle.retry_in("a") == 0.0
    clock.now += 61
    assert throttle.retry_in("a") == 0.0 and len(throttle) == 0


def test_memory_is_bounded_least_recently_failed_first() -> None:
    clock = Clock()
    throttle = AdminThrottle(2, 60.0, max_addresses=2, clock=clock)
    throttle.failed("a")
    throttle.failed("a")
    throttle.failed("b")
    throttle.failed("a")  # "a" is the most recent again... and stays locked
    throttle.failed("c")  # "b" goes
    assert len(throttle) == 2
    assert throttle.retry_in("a") > 0 and throttle.failed("b") == 1


def test_settings_are_checked() -> None:
    for bad in ({"limit": 0}, {"window": 0.0}, {"max_addresses": 0}):
        with pytest.raises(ValueError):
            AdminThrottle(**bad)  # type: ignore[arg-type]


def test_the_settings_and_the_process_throttle() -> None:
    env = {"DATABASE_URL": "postgresql://db.example/onsale", "ONSALE_SECRET_KEY": "s" * 16,
           "ONSALE_ADMIN_TOKEN": "a" * 16}
    default = admin_throttle(Settings.from_env(env))
    assert (default.limit, default.window) == (10, 60)
    tuned = admin_throttle(Settings.from_env({**env, "ONSALE_ADMIN_LIMIT_FAILURES": "3",
                                              "ONSALE_ADMIN_LIMIT_WINDOW_SECONDS": "600"}))
    assert (tuned.limit, tuned.window) == (3, 600)
    for name, value in (("ONSALE_ADMIN_LIMIT_FAILURES", "0"),
                        ("ONSALE_ADMIN_LIMIT_WINDOW_SECONDS", "86401")):
        with pytest.raises(ConfigError, match=name):
            Settings.from_env({**env, name: value})


def request(throttle: AdminThrottle, authorization: str | None, host: str) -> Request:
    app = SimpleNamespace(state=SimpleNamespace(shared=SimpleNamespace(
        settings=SimpleNamespace(admin_token=TOKEN), admin_throttle=throttle)))
    headers = [(b"authorization", authorization.encode())] if authorization is not None else []
    return Request({"type": "http", "method": "GET", "path": "/api/ops/audit",
                    "headers": headers, "client": (host, 40000), "app": app})


def outcome(throttle: AdminThrottle, authorization: str | None,
            host: str = "198.51.100.7") -> tuple[int, str] | None:
    try:
        require_admin(request(throttle, authorization, host))
    except Problem as problem:
        return problem.status, problem.code
    return None


def test_require_admin_refuses_an_address_past_the_limit_even_with_the_token(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    throttle = AdminThrottle(3, 60.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="onsale.security"):
        assert outcome(throttle, None) == (401, "admin_required")  # not a guess: not counted
        assert outcome(throttle, f"Bearer {TOKEN}") is None
        assert [outcome(throttle, f"Bearer wrong-{n}") for n in range(3)] == \
            [(401, "admin_required")] * 3
        assert outcome(throttle, f"Bearer {TOKEN}") == (429, "rate_limited")
        assert outcome(throttle, "Bearer wrong-again") == (429, "rate_limited")
        # Another address, and the same address's IPv6 neighbours are one client.
        assert outcome(throttle, f"Bearer {TOKEN}", "203.0.113.9") is None
        assert outcome(throttle, f"Bearer {TOKEN}", "::ffff:198.51.100.7") == \
            (429, "rate_limited")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and all("198.51.100.7" in line for line in lines)
    assert not any("wrong" in line or TOKEN in line for line in lines)  # never the token
    assert "refused until" in lines[-1]
    with pytest.raises(Problem) as info:
        require_admin(request(throttle, f"Bearer {TOKEN}", "198.51.100.7"))
    assert info.value.extra["retry_after"] == 60
    clock.now += 60
    assert outcome(throttle, f"Bearer {TOKEN}") is None
