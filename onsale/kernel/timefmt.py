"""One wire format for instants: UTC, ISO 8601, microseconds, ``Z``.

It matches what the SQL functions write into stored responses, so a hold
read back with GET looks exactly like the one POST returned.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_utc_iso(value: str) -> datetime:
    """The inverse of ``utc_iso``: an aware datetime in UTC."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
