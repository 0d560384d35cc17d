"""onsale.readiness: which dependency's absence takes a process out of rotation, with
literal reports, and the provider probe's cache."""

from __future__ import annotations

import pytest

from onsale.readiness import ProviderProbe, needed_by, verdict


@pytest.mark.parametrize(("report", "needed", "want"), [
    ({"database": "ok", "valkey": "ok", "provider": "ok"}, {"database"}, (200, "ready")),
    ({"database": "ok", "shard 2": "unavailable"}, {"database"}, (200, "degraded")),
    ({"database": "ok", "valkey": "unavailable"}, {"database"}, (200, "degraded")),
    ({"database": "ok", "provider": "unavailable"}, {"database"}, (200, "degraded")),
    ({"database": "unavailable", "valkey": "ok"}, {"database"}, (503, "unavailable")),
    ({"database": "ok", "valkey": "unavailable"}, {"valkey"}, (503, "unavailable")),
    ({"valkey": "ok"}, {"database", "valkey"}, (200, "ready")),  # not asked: not counted
    ({}, set(), (200, "ready")),
])
def test_the_verdict(report: dict[str, str], needed: set[str], want: tuple[int, str]) -> None:
    assert verdict(report, needed) == want


def test_what_each_role_cannot_serve_without() -> None:
    def roles(**tiers: bool) -> frozenset[str]:
        base = dict(core=False, edge=False, seatmap=False, capture=False, background=False)
        return needed_by(**{**base, **tiers})

    assert roles(core=True) == {"database"}
    assert roles(background=True) == {"database"}  # the worker
    assert roles(edge=True) == {"valkey"}
    assert roles(seatmap=True) == {"valkey"}
    assert roles(capture=True) == {"database", "valkey"}
    assert roles(core=True, edge=True, seatmap=True, background=True) == {"database", "valkey"}


async def test_the_provider_is_asked_at_most_every_ten_seconds() -> None:
    now = [100.0]
    probe = ProviderProbe("http://127.0.0.1:1", timeout=0.5, clock=lambda: now[0])
    assert await probe() == "unavailable"  # nothing listens on port 1
    probe.base_url = "http://127.0.0.1:2"
    probe._answer = (now[0], "ok")  # what a live provider answered a moment ago
    now[0] += 9.9
    assert await probe() == "ok"  # cached
    now[0] += 0.2
    assert await probe() == "unavailable"  # asked again
