"""onsale config check and onsale audit --json, on literal inputs."""

from __future__ import annotations

import uuid

from onsale.config_check import check, masked
from onsale.core.audit import audit_document

SECRET = "s" * 32
ENV = {"DATABASE_URL": "postgresql://app:hunter2@db:5432/onsale",
       "ONSALE_SECRET_KEY": SECRET, "ONSALE_ADMIN_TOKEN": "t" * 20,
       "ONSALE_HOLD_TTL_SECONDS": "120", "ONSALE_HOLD_TTL_SECOND": "90"}


def test_a_role_s_settings_are_printed_with_their_source_and_secrets_masked() -> None:
    result = check("core", ENV)
    assert result.ok and result.error is None
    lines = dict(line.split(" = ", 1) for line in result.lines)
    assert lines["DATABASE_URL"] == "postgresql://app:***@db:5432/onsale  (set)"
    assert lines["ONSALE_SECRET_KEY"] == "*** (32 characters)  (set)"
    assert lines["ONSALE_HOLD_TTL_SECONDS"] == "120  (set)"
    assert lines["ONSALE_LOG_LEVEL"] == "INFO  (default)"
    assert "ONSALE_SEATMAP_SLOT" not in lines  # core does not read the seat map's
    assert SECRET not in "\n".join(result.lines) and "hunter2" not in "\n".join(result.lines)
    assert "ONSALE_SEATMAP_SLOT" in dict(x.split(" = ", 1) for x in check("cdc", ENV).lines)


def test_an_unknown_name_is_a_warning_with_the_closest_setting() -> None:
    (warning,) = check("core", ENV).warnings
    assert warning.startswith("ONSALE_HOLD_TTL_SECOND is not a setting")
    assert "did you mean ONSALE_HOLD_TTL_SECONDS?" in warning


def test_what_would_stop_a_role_is_the_error() -> None:
    short = {**ENV, "ONSALE_SECRET_KEY": "short"}
    result = check("edge", short)
    assert not result.ok and result.error is not None and "ONSALE_SECRET_KEY" in result.error
    assert check("worker", short).ok  # the worker signs nothing
    bad = check("core", {**ENV, "ONSALE_LOG_LEVEL": "chatty"})
    assert not bad.ok and bad.error is not None and "ONSALE_LOG_LEVEL" in bad.error


def test_masking() -> None:
    assert masked("ONSALE_STRIPE_SECRET_KEY", "sk_test_123") == "*** (11 characters)"
    assert masked("ONSALE_IDEMPOTENCY_KEY_TTL", "60") == "60"
    assert masked("REDIS_URL", "redis+cluster://:pw@a:1,b:2") .count("pw") == 0
    assert masked("ONSALE_PUBLIC_URL", None) == "(unset)"


def test_the_audit_as_one_document() -> None:
    hold = uuid.UUID(int=7)
    doc = audit_document([(1, {"one_valid_sale_per_seat": [], "held_seats_belong_to_their_hold":
                               [{"hold_id": hold, "seat_id": 3, "ok": False}] * 3}),
                          (2, {"one_valid_sale_per_seat": []})], shown=2)
    assert doc["violations"] == 3
    first = doc["shards"][0]
    assert (first["shard"], first["violations"]) == (1, 3)
    held = first["checks"]["held_seats_belong_to_their_hold"]
    assert held["count"] == 3 and not held["ok"]
    assert held["rows"] == [{"hold_id": str(hold), "seat_id": 3, "ok": False}] * 2
    assert doc["shards"][1] == {"shard": 2, "violations": 0, "checks": {
        "one_valid_sale_per_seat": {"ok": True, "count": 0, "rows": []}}}
