"""The ticket routes' pure parts (core/ticket_routes.py): ``?since=``, the revocations
document and its validator."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from onsale.core.ticket_routes import parse_since, revocations_document, revocations_etag
from onsale.kernel.problems import Problem

AT = datetime(2026, 12, 24, 18, 0, tzinfo=UTC)
ROW = {"ticket_id": "01900000-0000-7000-8000-000000000001", "reason": "cancelled",
       "revoked_at": AT}


def test_since_is_an_instant_with_a_zone() -> None:
    assert parse_since(None) is None
    assert parse_since("2026-12-24T18:00:00.000000Z") == AT
    assert parse_since("2026-12-24T19:00:00+01:00") == AT


@pytest.mark.parametrize("raw", ["yesterday", "2026-12-24", "2026-12-24T18:00:00",
                                 "9999-12-31T23:59:59-23:59", ""])
def test_anything_else_is_invalid_request(raw: str) -> None:
    with pytest.raises(Problem) as info:
        parse_since(raw)
    assert (info.value.status, info.value.code) == (400, "invalid_request")


def test_the_etag_follows_the_list_not_the_time_of_the_read() -> None:
    first = revocations_document(7, [ROW], AT, None)
    assert first == {"event_id": 7, "as_of": "2026-12-24T18:00:00.000000Z",
                     "revoked": [{"ticket_id": ROW["ticket_id"], "reason": "cancelled",
                                  "revoked_at": "2026-12-24T18:00:00.000000Z"}]}
    later = revocations_document(7, [ROW], datetime(2026, 12, 25, tzinfo=UTC), None)
    assert revocations_etag(first) == revocations_etag(later)
    assert revocations_etag(first) != revocations_etag(revocations_document(7, [], AT, None))
    assert revocations_etag(first) != revocations_etag(revocations_document(7, [ROW], AT, AT))
