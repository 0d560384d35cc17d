"""Event times in the venue's zone (onsale/kernel/venue_time.py), across daylight-saving
changes: the UTC instant decides, only the offset shown changes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from onsale.kernel.venue_time import venue_clock, venue_when, zone_of


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(("instant", "zone", "shown"), [
    # Berlin springs forward at 01:00 UTC on 29 March 2026 (CET +1 to CEST +2)
    (utc(2026, 3, 29, 0, 30), "Europe/Berlin", "Sun 29 Mar 2026, 01:30 CET"),
    (utc(2026, 3, 29, 1, 30), "Europe/Berlin", "Sun 29 Mar 2026, 03:30 CEST"),
    (utc(2026, 10, 25, 0, 30), "Europe/Berlin", "Sun 25 Oct 2026, 02:30 CEST"),
    (utc(2026, 10, 25, 1, 30), "Europe/Berlin", "Sun 25 Oct 2026, 02:30 CET"),  # again
    # New York falls back at 06:00 UTC on 1 November 2026 (EDT -4 to EST -5)
    (utc(2026, 11, 1, 5, 30), "America/New_York", "Sun 1 Nov 2026, 01:30 EDT"),
    (utc(2026, 11, 1, 6, 30), "America/New_York", "Sun 1 Nov 2026, 01:30 EST"),
    (utc(2026, 12, 4, 23, 30), "America/New_York", "Fri 4 Dec 2026, 18:30 EST"),
    # across the date line, and a zone without daylight saving
    (utc(2026, 12, 4, 23, 30), "Pacific/Auckland", "Sat 5 Dec 2026, 12:30 NZDT"),
    (utc(2026, 12, 4, 23, 30), "Asia/Kolkata", "Sat 5 Dec 2026, 05:00 IST"),
    (utc(2026, 12, 4, 23, 30), "UTC", "Fri 4 Dec 2026, 23:30 UTC"),
    (utc(2026, 12, 4, 23, 30), None, "Fri 4 Dec 2026, 23:30 UTC"),
    (utc(2026, 12, 4, 23, 30), "Mars/Olympus_Mons", "Fri 4 Dec 2026, 23:30 UTC"),
])
def test_a_time_at_the_venue(instant: datetime, zone: str | None, shown: str) -> None:
    assert venue_when(instant, zone) == shown
    assert shown.endswith(venue_clock(instant, zone))


def test_two_instants_an_hour_apart_across_the_change_stay_an_hour_apart() -> None:
    before, after = utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 30)
    assert (after - before).total_seconds() == 3600  # the countdown's arithmetic
    assert venue_clock(before, "Europe/Berlin") == "01:30 CET"
    assert venue_clock(after, "Europe/Berlin") == "03:30 CEST"


@pytest.mark.parametrize("name", ["Europe/Berlin", "America/Argentina/Buenos_Aires", "UTC",
                                  "Etc/GMT+5", "America/Port-au-Prince"])
def test_iana_names_are_zones(name: str) -> None:
    assert zone_of(name) is not None


@pytest.mark.parametrize("name", ["", "Europe/Atlantis", "../../etc/passwd", "/etc/localtime",
                                  "Europe//Berlin", "EST5EDT,M3.2.0,M11.1.0", "Europe/Berlin ",
                                  "x" * 65, "Éurope/Berlin", "Europe/Berlin\x00"])
def test_anything_else_is_not(name: str) -> None:
    assert zone_of(name) is None


@pytest.mark.parametrize("name", ["localtime", "Factory", "posixrules", "right/UTC",
                                  "right/Europe/Berlin", "posix/Europe/Berlin", "zone.tab",
                                  "tzdata.zi", "leapseconds"])
def test_files_of_the_zone_folder_that_are_no_place_are_not_zones(name: str) -> None:
    # ZoneInfo reads most of these from a system's /usr/share/zoneinfo (localtime is
    # the server's own zone, right/ counts leap seconds): an event stored with one
    # would read differently from one server to the next, and browsers know none.
    assert zone_of(name) is None
    assert venue_when(utc(2026, 3, 29, 1, 30), name) == "Sun 29 Mar 2026, 01:30 UTC"


def test_every_zone_the_tzdata_package_ships_is_one() -> None:
    # The dependency that gives machines without /usr/share/zoneinfo their zones: all
    # of them but Factory, "no zone known".
    from importlib.resources import files
    listed = (files("tzdata") / "zones").read_text().split()
    assert "Europe/Berlin" in listed and len(listed) > 400
    assert [name for name in listed if zone_of(name) is None] == ["Factory"]
