"""Seat-map settings from ONSALE_SEATMAP_* variables (docs/configuration.md#seat-map)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from onsale.kernel.settings import ConfigError, Section, load, setting
from onsale.seatmap.queries import identifier


def _identifier(name: str, raw: str) -> str:
    try:
        return identifier(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def _shard_numbers(name: str, raw: str) -> str:
    try:
        only = shard_numbers(raw)
    except ValueError:
        raise ConfigError(f"{name}: shard numbers from 1 to 32767, comma-separated "
                          f"(got {raw!r})") from None
    return ",".join(map(str, sorted(only or ())))


def shard_numbers(raw: str) -> frozenset[int] | None:
    """``ONSALE_SEATMAP_SHARDS`` as a set; None (empty): every shard."""
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    numbers = frozenset(int(p) for p in parts)
    if any(not 1 <= n <= 32767 for n in numbers):
        raise ValueError(raw)
    return numbers or None


@dataclass(frozen=True)
class SeatmapSettings(Section):
    ENV_PREFIX: ClassVar[str] = "ONSALE_SEATMAP_"

    slot: str = setting(
        "onsale_seatmap", "The logical replication slot of shard 1 (and the name of the "
        "consumers' lease); shard n's is this name with `_s<n>`. The same on both cdc "
        "processes", parse=_identifier,
        range_doc="lower-case identifier, at most 63 characters")
    publication: str = setting(
        "onsale_seatmap", "The publication on `seat_inventory`; created by the consumer if "
        "missing", parse=_identifier, range_doc="same")
    replication_url: str | None = setting(
        None, "The connection that streams shard 1's slot (its role needs the `REPLICATION` "
        "attribute); shard n's streams with the shard's DSN", default_doc="`DATABASE_URL`",
        range_doc="libpq URL")
    shards: str = setting(
        "", "The shards whose changes this cdc process captures (`2`, `1,3`); empty: every "
        "shard not retired. A busy shard's consumer takes about 0.4 of a core at 2,000 "
        "commits/s, so a deployment of several busy shards runs a cdc process for each "
        "(docs/seatmap.md#one-consumer-per-shard)", parse=_shard_numbers,
        range_doc="comma-separated shard numbers")
    shard_reload_s: int = setting(
        10, "How often the cdc process reads the shard list again, to start a consumer for "
        "a shard added since (a change of placement is noticed at once)", lo=1, hi=3600,
        unit="s")
    stream_maxlen: int = setting(
        10_000, "`MAXLEN ~` of each event's stream, and the entries each fan-out process "
        "keeps per event for clients that reconnect with `since`", lo=100, hi=10_000_000)
    snapshot_interval_ms: int = setting(
        1000, "How often a changed event's snapshot is written to Redis (also written with a "
        "publish when half the stream length has gone by since the last)", lo=50,
        hi=600_000, unit="ms")
    heartbeat_interval_ms: int = setting(
        1000, "The consumer's heartbeat through the WAL (moves a quiet slot, measures the "
        "lag) and its liveness key's refresh (TTL: three intervals)", lo=50, hi=600_000,
        unit="ms")
    lease_retry_ms: int = setting(
        1000, "How often a standby consumer tries to take the lease", lo=10, hi=60_000,
        unit="ms")
    tick_ms: int = setting(
        50, "Deltas are coalesced into at most one frame per tick per event", lo=5, hi=1000,
        unit="ms")
    client_queue: int = setting(
        64, "The most messages a socket may have waiting when the server is not uvicorn's "
        "sans-I/O WebSocket protocol; past it the client is cut off", lo=2, hi=100_000)
    client_buffer_kb: int = setting(
        512, "Bytes a socket may have waiting in its write buffer before the client is cut "
        "off (`reload`, close 4000)", lo=16, hi=1_048_576, unit="KiB")
    direct_writes: bool = setting(
        True, "`0` sends every frame through ASGI (slower; for comparison)")
    gzip_min_bytes: int = setting(
        1024, "Frames this large or larger are sent gzip-compressed (binary); `0`: never",
        lo=0, hi=1 << 30, unit="bytes")
    client_heartbeat_s: int = setting(
        5, "Heartbeat messages to clients", lo=1, hi=300, unit="s")
    ping_interval_s: int = setting(
        10, "WebSocket pings (and the pong timeout), on every process `onsale serve` starts "
        "with a seat map", lo=1, hi=300, unit="s")
    fallback_max_age_s: int = setting(
        5, "While change capture is down, how long a snapshot read from the table is reused "
        "and may be cached (`Cache-Control: max-age`)", lo=1, hi=300, unit="s")
    crash_after_publishes: int = setting(
        0, "Tests only: the consumer kills itself (SIGKILL) right after its n-th publish of "
        "entries, before confirming it", lo=0, hi=1_000_000_000, default_doc="`0` (off)")
    # The socket's limits (docs/security.md#websockets): what a client may send, how many
    # sockets an account may hold per process, how often admissions are re-checked.
    client_max_message_bytes: int = setting(
        16, "Largest message a client may send (clients send nothing meaningful); a larger "
        "one closes the socket with 1009. `onsale serve` also sets uvicorn's `ws_max_size` "
        "to it", lo=1, hi=1 << 20, unit="bytes")
    client_max_messages_per_s: int = setting(
        10, "More client messages than this within a second close the socket with 1008",
        lo=1, hi=10_000)
    max_sockets_per_account: int = setting(
        4, "Open sockets per account per seat-map process; the next handshake is refused "
        "with `429 too_many_sockets` ([security.md](security.md#websockets))", lo=1, hi=1000)
    admission_check_s: int = setting(
        2, "How often open sockets are checked: an expired admission closes with 4401, a "
        "revoked one with 4403", lo=1, hi=60, unit="s")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SeatmapSettings:
        return load(cls, os.environ if env is None else env)
