"""docs/seatmap.asyncapi.yaml: a valid AsyncAPI 3.0 document (checked against the
specification's own JSON Schema, from the locked @asyncapi/specs), its examples valid
against their messages, and every message the server builds (snapshot, delta with and
without GA places, heartbeat, each reload reason, unavailable) valid too, and invalid
ones refused, so the declared schemas bite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator, ValidationError

from onsale.seatmap.clients import reload_message
from onsale.seatmap.sequencer import Entry, control_frame, delta_frame
from onsale.seatmap.snapshot import SeatMap, encode

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "node_modules/@asyncapi/specs/schemas/3.0.0.json"
DOC: dict[str, Any] = yaml.safe_load((ROOT / "docs/seatmap.asyncapi.yaml").read_text())


def message_schema(name: str) -> dict[str, Any]:
    """The message's payload, with the document's components to resolve its refs."""
    payload = DOC["components"]["messages"][name]["payload"]
    return {**payload, "components": DOC["components"]}


def valid(name: str, message: dict[str, Any]) -> None:
    Draft7Validator(message_schema(name)).validate(message)


def test_the_document_is_asyncapi_3() -> None:
    if not SPEC.is_file():
        pytest.fail("npm ci installs @asyncapi/specs (package.json); make test runs it")
    spec = json.loads(SPEC.read_text())
    errors = sorted(Draft7Validator(spec).iter_errors(DOC), key=lambda e: list(e.path))
    assert errors == [], [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def test_the_documents_own_examples_are_valid() -> None:
    for name, message in DOC["components"]["messages"].items():
        assert message["examples"], name
        for example in message["examples"]:
            valid(name, example["payload"])


def test_every_message_the_server_builds_is_declared() -> None:
    seat_map = SeatMap(7, 0x1A2B3C8, bytearray(b"00310"), {3: 1795956240}, {(2, 0): 40})
    valid("snapshot", json.loads(encode(seat_map)))
    valid("snapshot", json.loads(encode(SeatMap(8))))  # an empty map, version 0/0
    plain = Entry("delta", 7, 0x1A2B3C8, 0x1A2C010, [(12, 1, 1795956301), (40, 0, None)])
    valid("delta", json.loads(delta_frame(plain)))
    ga = Entry("delta", 7, 0x1A2B3C8, 0x1A2C010, [], places=[(2, 0, 39), (2, 1, 0)])
    valid("delta", json.loads(delta_frame(ga)))
    valid("heartbeat", json.loads(control_frame("heartbeat", version="0/1A2C010",
                                                live=False)))
    for reason in ("overflow", "rebuild", "gap", "shutdown"):
        valid("reload", json.loads(reload_message(reason).payload))
    valid("unavailable", json.loads(control_frame("unavailable")))


@pytest.mark.parametrize(("name", "message"), [
    ("snapshot", {"type": "snapshot", "event_id": 7, "version": "0/1", "seat_count": 1,
                  "status": "5", "held": []}),                      # no status 5
    ("delta", {"type": "delta", "event_id": 7, "from": "0/1", "to": "0/2",
               "changes": [[1, 1, 5, 9]]}),                        # a change too long
    ("delta", {"type": "delta", "event_id": 7, "from": "0/1", "to": "0/2",
               "changes": [], "extra": 1}),                        # an undeclared field
    ("heartbeat", {"type": "heartbeat", "version": "nope", "live": True}),
    ("reload", {"type": "reload", "reason": "bored"}),
])
def test_what_the_document_refuses(name: str, message: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        valid(name, message)
