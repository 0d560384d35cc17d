"""One wire format for instants: UTC, ISO 8601, microseconds, ``Z``.

It matches what the SQL functions write into stored responses, so a hold
read back with GET looks exactly like the one POST returned.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_iso(value: datetime) -> str:
    """The year always in four digits, as RFC 3339 and PostgreSQL's ``YYYY`` write it
    (strftime's ``%Y`` writes year 237 as ``237``)."""
    utc = value.astimezone(UTC)
    return f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S.%f}Z"


def parse_utc_iso(value: str) -> datetime:
    """The inverse of ``utc_iso``: an aware datetime in UTC."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
