"""Stream entries of the outbox relay and their reading by the ticket consumer (no I/O)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

from onsale.core.outbox_relay import backoff, message_fields
from onsale.core.tickets import decode_fields, order_id_of

ROW = {
    "outbox_id": 42,
    "event_id": 7,
    "aggregate_id": uuid.UUID("01890000-0000-7000-8000-000000000001"),
    "event_type": "order.confirmed",
    "payload": {"order_id": "01890000-0000-7000-8000-000000000001", "seat_ids": [3, 1]},
    "created_at": datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2))),
}


def test_message_fields_are_text_with_json_payload_and_utc_time() -> None:
    fields = message_fields(ROW)
    assert fields == {
        "outbox_id": "42",
        "event_id": "7",
        "aggregate_id": "01890000-0000-7000-8000-000000000001",
        "type": "order.confirmed",
        "payload": '{"order_id":"01890000-0000-7000-8000-000000000001","seat_ids":[3,1]}',
        "created_at": "2026-05-01T10:00:00.123456Z",
    }


def test_payload_already_text_is_kept_as_is() -> None:
    raw = '{"b": 1, "a": 2}'
    assert message_fields({**ROW, "payload": raw})["payload"] == raw


def test_backoff_doubles_from_the_interval_and_is_capped() -> None:
    assert backoff(0, 0.2) == 0.2
    assert [backoff(n, 0.2) for n in (1, 2, 3)] == [0.4, 0.8, 1.6]
    assert backoff(10, 0.2) == 5.0
    assert backoff(10_000, 0.2, cap=3.0) == 3.0


def test_consumer_reads_what_the_relay_writes() -> None:
    wire = {k.encode(): v.encode() for k, v in message_fields(ROW).items()}
    fields = decode_fields(wire)
    assert fields["type"] == "order.confirmed"
    assert order_id_of(fields) == uuid.UUID("01890000-0000-7000-8000-000000000001")


def test_malformed_order_ids_are_none() -> None:
    for payload in ("{}", "not json", '{"order_id": "nope"}', '{"order_id": null}', "[]"):
        assert order_id_of({"payload": payload}) is None, payload
    assert order_id_of({}) is None
    good = json.dumps({"order_id": str(uuid.UUID(int=5))})
    assert order_id_of({"payload": good}) == uuid.UUID(int=5)
