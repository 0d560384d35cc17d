"""An account's orders a page at a time (core/order_list_rules.py): the cursor, the
limit, the merge of the shards' parts, and which orders are still converging."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from onsale.core.order_list_rules import (
    Cursor,
    in_progress,
    newest_first,
    parse_cursor,
    parse_limit,
)

A = uuid.UUID("00000000-0000-4000-8000-00000000000a")
B = uuid.UUID("00000000-0000-4000-8000-00000000000b")
C = uuid.UUID("00000000-0000-4000-8000-00000000000c")


def at(second: int, micro: int = 0) -> datetime:
    return datetime(2026, 12, 3, 20, 0, second, micro, tzinfo=UTC)


def row(second: int, order_id: uuid.UUID) -> dict[str, object]:
    return {"created_at": at(second), "order_id": order_id}


def test_a_cursor_round_trips_to_the_microsecond() -> None:
    cursor = Cursor(at(5, 123_456), A)
    assert cursor.text() == f"1796328005123456.{A}"
    assert parse_cursor(cursor.text()) == cursor


@pytest.mark.parametrize("raw", [
    "", "yesterday", f"{A}", f"-5.{A}", f"1.{str(A).upper()}", f"1.{A}x",
    f"{'9' * 18}.{A}", f"1 .{A}", f"١٢.{A}", "1." + "0" * 36])
def test_anything_else_is_not_a_cursor(raw: str) -> None:
    assert parse_cursor(raw) is None


def test_the_largest_cursor_is_a_time_not_an_overflow() -> None:
    assert parse_cursor(f"{'9' * 17}.{A}") == Cursor(
        datetime(5138, 11, 16, 9, 46, 39, 999_999, tzinfo=UTC), A)


@pytest.mark.parametrize(("raw", "limit"), [
    (None, 20), ("1", 1), ("100", 100), ("020", 20), ("0", None), ("101", None),
    ("-1", None), ("two", None), ("1e2", None), ("²", None), ("", None), ("0100", None)])
def test_the_limit(raw: str | None, limit: int | None) -> None:
    assert parse_limit(raw) == limit


def test_the_shards_parts_merge_newest_first_cut_to_a_page() -> None:
    shard1 = [row(9, A), row(5, B), row(1, C)]
    shard2 = [row(8, C), row(5, C), row(2, A)]
    page, after = newest_first([shard1, shard2], 4)
    assert [(r["created_at"].second, r["order_id"]) for r in page] == [  # type: ignore[attr-defined]
        (9, A), (8, C), (5, C), (5, B)]  # at the same time, the larger id first
    assert after == Cursor(at(5), B)


def test_the_last_page_has_no_cursor() -> None:
    page, after = newest_first([[row(3, A)], [], [row(2, B)]], 2)
    assert len(page) == 2 and after is None
    assert newest_first([], 5) == ([], None)


@pytest.mark.parametrize(("status", "tickets", "converging"), [
    ("PENDING", 0, True), ("REQUIRES_ACTION", 0, True), ("UNKNOWN", 0, True),
    ("AUTHORIZED", 0, True), ("CAPTURED", 0, True), ("CAPTURED", 2, False),
    ("DECLINED", 0, False), ("VOIDED", 0, False), ("CAPTURE_FAILED", 0, False),
    ("FAILED", 0, False)])
def test_which_orders_are_still_converging(status: str, tickets: int,
                                           converging: bool) -> None:
    assert in_progress(status, tickets) is converging
