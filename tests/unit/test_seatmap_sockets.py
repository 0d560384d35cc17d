"""seatmap.sockets: the socket's limits and admission rules, with literal inputs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from onsale.kernel.config import ConfigError
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.sockets import (
    CLOSE_EXPIRED,
    CLOSE_POLICY,
    CLOSE_REVOKED,
    CLOSE_TOO_BIG,
    AccountSockets,
    Inbound,
    close_for,
    expired,
    origin_allowed,
)

SITE = frozenset({"https://tickets.example", "https://www.tickets.example"})


def test_origin() -> None:
    assert origin_allowed("https://tickets.example", SITE)
    assert origin_allowed(" HTTPS://Tickets.Example ", SITE)
    assert not origin_allowed("https://evil.example", SITE)
    assert not origin_allowed("null", SITE)
    assert not origin_allowed("http://tickets.example", SITE)   # another scheme
    assert not origin_allowed("https://tickets.example:8443", SITE)
    assert origin_allowed(None, SITE)                           # not a browser
    assert origin_allowed("https://evil.example", None)         # no check configured


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_inbound_size() -> None:
    limits = Inbound(16, 10, Clock())
    assert limits.receive(0) is None
    assert limits.receive(16) is None
    assert limits.receive(17) == (CLOSE_TOO_BIG, "message too big")


def test_inbound_rate() -> None:
    clock = Clock()
    limits = Inbound(16, 3, clock)
    assert [limits.receive(1) for _ in range(3)] == [None, None, None]
    assert limits.receive(1) == (CLOSE_POLICY, "too many messages")
    clock.now += 1.0                      # a new second
    limits = Inbound(16, 3, clock)
    for _ in range(5):
        clock.now += 0.4                  # 2.5 a second: fine
        assert limits.receive(1) is None


def test_close_codes() -> None:
    assert close_for("admission_revoked") == (CLOSE_REVOKED, "admission_revoked")
    assert close_for("admission_expired") == (CLOSE_EXPIRED, "admission_expired")
    assert close_for("admission_invalid") == (CLOSE_EXPIRED, "admission_invalid")


@dataclass
class Admission:
    account: str
    expires_at: float

    async def lapsed(self) -> str | None:
        return None


def test_expiry() -> None:
    assert not expired(Admission("a", 100.0), 99.9)
    assert expired(Admission("a", 100.0), 100.0)


def test_sockets_per_account() -> None:
    sockets = AccountSockets(2)
    assert sockets.take("a") and sockets.take("a")
    assert not sockets.take("a")          # over the cap: refused, nothing counted
    assert sockets.take("b")
    assert sockets.count("a") == 2
    sockets.give("a")
    assert sockets.take("a")
    sockets.give("a")
    sockets.give("a")
    sockets.give("a")                     # one too many: no negative count
    assert sockets.count("a") == 0 and sockets.take("a")


def test_the_socket_settings_are_read() -> None:
    default = SeatmapSettings.from_env({})
    assert (default.client_max_message_bytes, default.client_max_messages_per_s,
            default.max_sockets_per_account, default.admission_check_s) == (16, 10, 4, 2)
    s = SeatmapSettings.from_env({"ONSALE_SEATMAP_CLIENT_MAX_MESSAGE_BYTES": "64",
                                  "ONSALE_SEATMAP_CLIENT_MAX_MESSAGES_PER_S": "3",
                                  "ONSALE_SEATMAP_MAX_SOCKETS_PER_ACCOUNT": "1",
                                  "ONSALE_SEATMAP_ADMISSION_CHECK_S": "5"})
    assert (s.client_max_message_bytes, s.client_max_messages_per_s,
            s.max_sockets_per_account, s.admission_check_s) == (64, 3, 1, 5)
    with pytest.raises(ConfigError, match="ONSALE_SEATMAP_MAX_SOCKETS_PER_ACCOUNT"):
        SeatmapSettings.from_env({"ONSALE_SEATMAP_MAX_SOCKETS_PER_ACCOUNT": "0"})
