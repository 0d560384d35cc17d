"""Seat-map settings from ONSALE_SEATMAP_* variables (docs/configuration.md#seat-map)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from onsale.kernel.config import ConfigError, env_int
from onsale.seatmap.queries import identifier


@dataclass(frozen=True)
class SeatmapSettings:
    slot: str = "onsale_seatmap"
    publication: str = "onsale_seatmap"
    replication_url: str | None = None  # default: DATABASE_URL
    stream_maxlen: int = 10_000
    snapshot_interval_ms: int = 1000
    heartbeat_interval_ms: int = 1000
    lease_retry_ms: int = 1000
    tick_ms: int = 50
    client_queue: int = 64
    client_buffer_kb: int = 512
    direct_writes: bool = True
    gzip_min_bytes: int = 1024
    client_heartbeat_s: int = 5
    ping_interval_s: int = 10
    fallback_max_age_s: int = 5
    crash_after_publishes: int = 0  # test hook: kill -9 after the n-th publish of entries
    # The socket's limits (docs/security.md#websockets): what a client may send, how many
    # sockets an account may hold per process, how often admissions are re-checked.
    client_max_message_bytes: int = 16
    client_max_messages_per_s: int = 10
    max_sockets_per_account: int = 4
    admission_check_s: int = 2

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SeatmapSettings:
        env = os.environ if env is None else env
        names = {}
        for key, default in (("slot", cls.slot), ("publication", cls.publication)):
            name = env.get(f"ONSALE_SEATMAP_{key.upper()}") or default
            try:
                names[key] = identifier(name)
            except ValueError as exc:
                raise ConfigError(f"ONSALE_SEATMAP_{key.upper()}: {exc}") from None
        return cls(
            replication_url=env.get("ONSALE_SEATMAP_REPLICATION_URL") or None,
            stream_maxlen=env_int(env, "ONSALE_SEATMAP_STREAM_MAXLEN", 10_000, 100, 10_000_000),
            snapshot_interval_ms=env_int(
                env, "ONSALE_SEATMAP_SNAPSHOT_INTERVAL_MS", 1000, 50, 600_000),
            heartbeat_interval_ms=env_int(
                env, "ONSALE_SEATMAP_HEARTBEAT_INTERVAL_MS", 1000, 50, 600_000),
            lease_retry_ms=env_int(env, "ONSALE_SEATMAP_LEASE_RETRY_MS", 1000, 10, 60_000),
            tick_ms=env_int(env, "ONSALE_SEATMAP_TICK_MS", 50, 5, 1000),
            client_queue=env_int(env, "ONSALE_SEATMAP_CLIENT_QUEUE", 64, 2, 100_000),
            client_buffer_kb=env_int(env, "ONSALE_SEATMAP_CLIENT_BUFFER_KB", 512, 16, 1_048_576),
            direct_writes=env_int(env, "ONSALE_SEATMAP_DIRECT_WRITES", 1, 0, 1) == 1,
            gzip_min_bytes=env_int(env, "ONSALE_SEATMAP_GZIP_MIN_BYTES", 1024, 0, 1 << 30),
            client_heartbeat_s=env_int(env, "ONSALE_SEATMAP_CLIENT_HEARTBEAT_S", 5, 1, 300),
            ping_interval_s=env_int(env, "ONSALE_SEATMAP_PING_INTERVAL_S", 10, 1, 300),
            fallback_max_age_s=env_int(env, "ONSALE_SEATMAP_FALLBACK_MAX_AGE_S", 5, 1, 300),
            crash_after_publishes=env_int(
                env, "ONSALE_SEATMAP_CRASH_AFTER_PUBLISHES", 0, 0, 1_000_000_000),
            client_max_message_bytes=env_int(
                env, "ONSALE_SEATMAP_CLIENT_MAX_MESSAGE_BYTES", 16, 1, 1 << 20),
            client_max_messages_per_s=env_int(
                env, "ONSALE_SEATMAP_CLIENT_MAX_MESSAGES_PER_S", 10, 1, 10_000),
            max_sockets_per_account=env_int(
                env, "ONSALE_SEATMAP_MAX_SOCKETS_PER_ACCOUNT", 4, 1, 1000),
            admission_check_s=env_int(env, "ONSALE_SEATMAP_ADMISSION_CHECK_S", 2, 1, 60),
            **names,
        )
