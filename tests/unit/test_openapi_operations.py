"""Every operation of every role's OpenAPI document has an operationId, unique across
all of them, and tags naming the tier that serves it and its area."""

from __future__ import annotations

from onsale.compose import CORE_API, EDGE_API
from onsale.kernel.openapi import area, document, operation_id
from onsale.seatmap.openapi import SEATMAP_API


def operations() -> list[tuple[str, str, dict[str, object]]]:
    doc = document([CORE_API, EDGE_API, SEATMAP_API])
    return [(path, method, op) for path, item in doc["paths"].items()
            for method, op in item.items() if isinstance(op, dict) and "responses" in op]


def test_every_operation_has_a_unique_id_and_its_tags() -> None:
    ops = operations()
    assert len(ops) > 30
    ids = [op["operationId"] for _, _, op in ops]
    assert len(ids) == len(set(ids))
    tiers = {"core", "edge", "seatmap"}
    for path, _, op in ops:
        tags = op["tags"]
        assert isinstance(tags, list) and tags[0] in tiers and tags[1] == area(path), path


def test_the_ids_read_as_the_route() -> None:
    assert operation_id("get", "/api/events/{event_id}/queue") == "getEventsByEventIdQueue"
    assert operation_id("post", "/api/holds/{hold_id}/checkout") == "postHoldsByHoldIdCheckout"
    assert operation_id("get", "/openapi.json") == "getOpenapiJson"
    assert area("/api/ops/audit") == "ops" and area("/metrics") == "service"
