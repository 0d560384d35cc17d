"""An account's orders, newest first, one page at a time (pure; ``core/order_list.py``
reads them from every shard).

Orders live on the shard of their event, so an account's orders are spread over the
shards. Each shard gives its newest orders older than the cursor, at most a page and
one more; the pages are merged by (created_at, order_id), newest first, and cut to a
page. The cursor names the last order shown: ``<unix microseconds>.<order id>``, where
the next page starts (keyset pagination: an order created while the shopper reads
does not shift the later pages).
"""

from __future__ import annotations

import heapq
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
_CURSOR = re.compile(r"([0-9]{1,17})\."
                     r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# What a payment settles into (docs/api.md); DECLINED waits for another card while the
# hold lasts, and nothing else changes it by itself.
SETTLED = frozenset({"CAPTURED", "DECLINED", "VOIDED", "CAPTURE_FAILED", "FAILED"})


@dataclass(frozen=True, order=True)
class Cursor:
    """Where a page ends: the last order shown (its creation time and id)."""

    created_at: datetime
    order_id: uuid.UUID

    def text(self) -> str:
        micros = (self.created_at - _EPOCH) // timedelta(microseconds=1)
        return f"{micros}.{self.order_id}"


def parse_cursor(raw: str) -> Cursor | None:
    """A cursor as ``Cursor.text`` wrote it; None: not one."""
    found = _CURSOR.fullmatch(raw)  # at most 17 digits: before the year 5139
    if found is None:
        return None
    return Cursor(_EPOCH + timedelta(microseconds=int(found[1])), uuid.UUID(found[2]))


def parse_limit(raw: str | None) -> int | None:
    """``?limit=``: 1..MAX_LIMIT in ASCII digits (DEFAULT_LIMIT when absent); None: not."""
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.isascii() or not raw.isdigit() or len(raw) > 3:
        return None
    value = int(raw)
    return value if 1 <= value <= MAX_LIMIT else None


def cursor_of(row: Mapping[str, Any]) -> Cursor:
    return Cursor(row["created_at"], row["order_id"])


def newest_first(pages: Iterable[Sequence[Mapping[str, Any]]],
                 limit: int) -> tuple[list[Mapping[str, Any]], Cursor | None]:
    """The newest ``limit`` orders of the shards' pages (each newest first, each at most
    ``limit + 1`` long), and the cursor of the next page (None: this is the last)."""
    merged = heapq.merge(*pages, key=cursor_of, reverse=True)
    taken: list[Mapping[str, Any]] = []
    for row in merged:
        if len(taken) == limit:
            return taken, cursor_of(taken[-1])
        taken.append(row)
    return taken, None


def in_progress(payment_status: str, tickets: int) -> bool:
    """Whether the order is still converging: its payment not settled, or paid and its
    tickets not issued yet. A page showing it refreshes until it is not."""
    return payment_status not in SETTLED or (payment_status == "CAPTURED" and tickets == 0)
