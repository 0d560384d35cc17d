"""An event's times in its venue's time zone (pure). The API keeps every time in UTC;
the pages say them where the event happens ("Sat 28 Mar 2026, 19:30 CET"), and the
browser adds the shopper's own zone beside them when it differs (``local_time.js``).

Zones are IANA names from the time-zone database (``zoneinfo``; the ``tzdata`` package
when the system has none). A time is converted from its UTC instant, so a daylight-
saving change between two times moves neither: only the offset shown differs.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

DEFAULT_ZONE = "UTC"
MAX_NAME = 64
# What an IANA name looks like: ASCII letters, digits and _+-, parts joined by "/".
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9][A-Za-z0-9_+-]*){0,2}")
# Files of a system's zone folder that ZoneInfo reads but that are no place's zone:
# this machine's own zone (a link to /etc/localtime), the zone of "no zone known"
# ("-00"), and the rules old POSIX TZ strings borrow. A zone so named would read
# differently from one server to the next, and browsers do not know it.
NOT_PLACES = frozenset({"localtime", "Factory", "posixrules"})


@functools.cache
def known_names() -> frozenset[str]:
    """The zones an event may have: the time-zone database's names, from the system's
    folder and the ``tzdata`` package alike (``available_timezones`` leaves out the
    ``posix/`` and ``right/`` copies, the latter counting leap seconds)."""
    return frozenset(available_timezones()) - NOT_PLACES


@functools.cache
def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def zone_of(name: str) -> ZoneInfo | None:
    """The zone named ``name`` (an IANA name, e.g. ``Europe/Berlin``); None: no such
    zone (a path, a POSIX TZ string, a typo, or a file of the zone folder that is no
    place's zone, such as ``localtime`` or ``right/UTC``, is none)."""
    if len(name) > MAX_NAME or not _NAME.fullmatch(name) or name not in known_names():
        return None
    return _zone(name)


def venue_zone(name: str | None) -> ZoneInfo:
    """The event's zone; UTC for one the database no longer knows (or none set)."""
    found = zone_of(name or DEFAULT_ZONE)
    return found if found is not None else ZoneInfo(DEFAULT_ZONE)


def venue_clock(value: datetime, zone: str | None) -> str:
    """``19:30 CET``: the time of day at the venue, with the zone's abbreviation."""
    local = value.astimezone(venue_zone(zone))
    return f"{local:%H:%M} {local.tzname()}"


def venue_when(value: datetime, zone: str | None) -> str:
    """``Sat 28 Mar 2026, 19:30 CET``."""
    local = value.astimezone(venue_zone(zone))
    return f"{local:%a} {local.day} {local:%b %Y}, {venue_clock(value, zone)}"
