"""Header parsing helpers in core/inputs.py."""

from __future__ import annotations

import pytest

from core.inputs import accepts_gzip, etag_matches


@pytest.mark.parametrize(("header", "expected"), [
    ("gzip", True), ("gzip, deflate, br", True), ("br;q=1.0, gzip;q=0.5", True),
    ("gzip;q=0", False), ("identity", False), ("", False), ("*", True), ("*;q=0", False),
    ("GZIP", True), ("gzip;q=abc", False),
])
def test_accepts_gzip(header: str, expected: bool) -> None:
    assert accepts_gzip(header) is expected


@pytest.mark.parametrize(("header", "matches"), [
    ('"abc"', True), ('W/"abc"', True), ('"x", "abc"', True), ("*", True),
    ('"abcd"', False), ('"ab"', False), ("", False),
])
def test_etag_matches(header: str, matches: bool) -> None:
    assert etag_matches(header, '"abc"') is matches
