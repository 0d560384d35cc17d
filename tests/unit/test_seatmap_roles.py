"""The seat-map roles: what they serve matches the OpenAPI document, their settings, and
the WebSocket route (outside OpenAPI) is there."""

from __future__ import annotations

import pytest
from starlette.routing import Route, WebSocketRoute

from onsale.compose import (
    ROLES,
    SECRETLESS_ROLES,
    api_specs,
    build_app,
    tiers_for,
    websocket_limits,
)
from onsale.kernel.config import ConfigError, Settings
from onsale.kernel.openapi import document
from onsale.seatmap.config import SeatmapSettings

SETTINGS = Settings(database_url="postgresql://unused/x", redis_url="redis://unused:1/0",
                    secret_key="unit-test-secret-0123456789",
                    admin_token="unit-test-admin-0123456789")
WS = "/ws/events/{event_id}/seatmap"


def test_the_seatmap_role_serves_its_document_and_the_websocket() -> None:
    app = build_app("seatmap", SETTINGS, seatmap=SeatmapSettings(ping_interval_s=7))
    assert [s.name for s in api_specs(tiers_for("seatmap", SETTINGS))] == ["seatmap"]
    assert websocket_limits("seatmap", SeatmapSettings(ping_interval_s=7)).ping_interval == 7
    served = {(r.path_format, m.lower()) for r in app.routes if isinstance(r, Route)
              for m in r.methods or () if m != "HEAD"}
    doc = document(api_specs(tiers_for("seatmap", SETTINGS)))
    documented = {(p, m) for p, item in doc["paths"].items() for m in item}
    extra = {("/healthz", "get"), ("/metrics", "get"), ("/openapi.json", "get"), ("/readyz", "get")}
    assert served - extra == documented
    assert [r.path for r in app.routes if isinstance(r, WebSocketRoute)] == [WS]


def test_the_dev_app_mounts_the_seat_map() -> None:
    app = build_app("dev", SETTINGS, seatmap=SeatmapSettings())
    assert "seatmap" in [s.name for s in api_specs(tiers_for("dev", SETTINGS))]
    assert WS in [r.path for r in app.routes if isinstance(r, WebSocketRoute)]


def test_roles_need_redis_and_only_the_gated_one_needs_secrets() -> None:
    # The seatmap role verifies sessions and admission tokens; cdc signs nothing.
    assert {"cdc", "seatmap"} <= set(ROLES) and "cdc" in SECRETLESS_ROLES
    assert "seatmap" not in SECRETLESS_ROLES
    no_redis = Settings(database_url="postgresql://unused/x", redis_url=None,
                        secret_key="", admin_token="")
    for role in ("cdc", "seatmap"):
        with pytest.raises(ConfigError):
            build_app(role, no_redis, seatmap=SeatmapSettings())
    env = {"DATABASE_URL": "postgresql://unused/x", "REDIS_URL": "redis://unused:1/0"}
    cdc = build_app("cdc", Settings.from_env(env, require_secrets=False),
                    seatmap=SeatmapSettings())
    assert {"/metrics", "/healthz"} <= {getattr(r, "path", None) for r in cdc.routes}


def test_seatmap_settings_from_the_environment() -> None:
    assert SeatmapSettings.from_env({}) == SeatmapSettings()
    s = SeatmapSettings.from_env({
        "ONSALE_SEATMAP_SLOT": "sm_blue", "ONSALE_SEATMAP_PUBLICATION": "pub_x",
        "ONSALE_SEATMAP_TICK_MS": "100", "ONSALE_SEATMAP_STREAM_MAXLEN": "5000",
        "ONSALE_SEATMAP_CLIENT_QUEUE": "16", "ONSALE_SEATMAP_REPLICATION_URL": "postgresql:///r",
        "ONSALE_SEATMAP_SNAPSHOT_INTERVAL_MS": "", "ONSALE_SEATMAP_FALLBACK_MAX_AGE_S": "10"})
    assert (s.slot, s.publication, s.tick_ms, s.stream_maxlen, s.client_queue) == (
        "sm_blue", "pub_x", 100, 5000, 16)
    assert s.replication_url == "postgresql:///r" and s.snapshot_interval_ms == 1000
    assert s.fallback_max_age_s == 10


@pytest.mark.parametrize(("name", "value"), [
    ("ONSALE_SEATMAP_SLOT", "Bad-Name"), ("ONSALE_SEATMAP_SLOT", "x" * 64),
    ("ONSALE_SEATMAP_PUBLICATION", "a;drop"), ("ONSALE_SEATMAP_TICK_MS", "0"),
    ("ONSALE_SEATMAP_TICK_MS", "fast"), ("ONSALE_SEATMAP_STREAM_MAXLEN", "10"),
    ("ONSALE_SEATMAP_CLIENT_QUEUE", "1"), ("ONSALE_SEATMAP_CRASH_AFTER_PUBLISHES", "-1"),
])
def test_bad_seatmap_settings_stop_startup(name: str, value: str) -> None:
    with pytest.raises(ConfigError):
        SeatmapSettings.from_env({name: value})
