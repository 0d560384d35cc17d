"""Request parsing helpers in core/inputs.py: headers, path ids, the JSON content type."""

from __future__ import annotations

import uuid

import pytest

from onsale.kernel.inputs import (
    accepts_gzip,
    etag_matches,
    is_json_media_type,
    parse_id,
    parse_uuid,
)


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


# ---- path ids and the JSON content type (core/inputs.py) ---------------------

@pytest.mark.parametrize(("raw", "expected"), [
    ("1", 1), ("42", 42), ("007", 7), (str(2**63 - 1), 2**63 - 1),
    ("0", None), (str(2**63), None), ("", None), ("-1", None), ("+1", None), (" 1", None),
    ("1 ", None), ("1_000", None), ("1.0", None), ("0x10", None), ("1\n", None),
    ("²", None), ("٣", None), ("１２", None), ("1²", None), ("߀", None),
    ("9" * 20, None), ("9" * 5000, None), (None, None), (7, None),
])
def test_parse_id_takes_ascii_digits_only(raw: object, expected: int | None) -> None:
    assert parse_id(raw) == expected


def test_python_alone_would_take_those_digits() -> None:
    # Why parse_id exists: both of these are true, and int("²") raises.
    assert "²".isdigit() and int("٣") == 3


@pytest.mark.parametrize(("raw", "ok"), [
    ("6f1c2d1e-0b7a-4c1e-9a57-7d0c2a6b8e11", True),
    ("6F1C2D1E0B7A4C1E9A577D0C2A6B8E11", True),
    ("٣" * 32, False), ("²" * 32, False), ("nope", False), ("", False),
])
def test_parse_uuid(raw: str, ok: bool) -> None:
    parsed = parse_uuid(raw)
    assert (parsed is not None) is ok
    if ok:
        assert parsed == uuid.UUID(raw)


@pytest.mark.parametrize(("header", "ok"), [
    ("application/json", True), ("application/json; charset=utf-8", True),
    ("Application/JSON;charset=UTF-8", True), (" application/json ", True),
    ("application/problem+json", True), ("application/merge-patch+json", True),
    ("text/plain", False), ("text/plain; charset=utf-8", False),
    ("application/x-www-form-urlencoded", False), ("multipart/form-data; boundary=x", False),
    ("application/jsonp", False), ("application/+json", False), ("text/json", False),
    ("application", False), ("json", False), ("", False), (None, False),
])
def test_is_json_media_type(header: str | None, ok: bool) -> None:
    assert is_json_media_type(header) is ok
