"""Events: operator creation, listing, and the static venue layout."""

from __future__ import annotations

import gzip
import json
from typing import Any

from tests.conftest import ADMIN_TOKEN, Api, audit_clean


async def test_create_list_get_event(api: Api) -> None:
    event_id = await api.create_event(
        name="Gala", seats=1234, hold_ttl_seconds=3, max_tickets_per_account=4,
        onsale_at="2030-01-02T03:04:05Z",
        price_tiers=[{"name": "Front", "price_minor": 20000},
                     {"name": "Back", "price_minor": 5000}])
    async with api.client() as c:
        listed = (await c.get("/api/events")).json()["events"]
        one = (await c.get(f"/api/events/{event_id}")).json()
        missing = await c.get("/api/events/424242")
        junk = await c.get("/api/events/abc")
    assert [e["event_id"] for e in listed] == [event_id]
    assert one["seat_count"] == 1234 and one["hold_ttl_seconds"] == 3
    assert one["max_tickets_per_account"] == 4 and one["max_seats_per_hold"] == 6
    assert one["onsale_at"] == "2030-01-02T03:04:05.000000Z"
    assert [t["name"] for t in one["price_tiers"]] == ["Front", "Back"]
    assert missing.status_code == 404 and missing.json()["code"] == "event_not_found"
    assert junk.status_code == 404


async def test_event_creation_needs_the_operator_token(api: Api) -> None:
    async with api.client() as c:
        none = await c.post("/api/ops/events", json={"name": "x"})
        wrong = await c.post("/api/ops/events", json={"name": "x"},
                             headers={"Authorization": "Bearer nope"})
        bad = await c.post("/api/ops/events", json={"name": "x", "seats": -1},
                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert none.status_code == 401 and none.json()["code"] == "admin_required"
    assert wrong.status_code == 401
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_request"


async def test_venue_is_content_addressed_and_cacheable(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=321)
    async with api.client() as c:
        plain = await c.get(f"/api/events/{event_id}/venue",
                            headers={"Accept-Encoding": "identity"})
        zipped = await c.get(f"/api/events/{event_id}/venue",
                             headers={"Accept-Encoding": "gzip"})
        again = await c.get(f"/api/events/{event_id}/venue",
                            headers={"Accept-Encoding": "identity",
                                     "If-None-Match": f'W/"x", {plain.headers["etag"]}'})
        again_gz = await c.get(f"/api/events/{event_id}/venue",
                               headers={"Accept-Encoding": "gzip",
                                        "If-None-Match": zipped.headers["etag"]})
        other = await c.get(f"/api/events/{event_id}/venue",
                            headers={"Accept-Encoding": "identity",
                                     "If-None-Match": zipped.headers["etag"]})
        refused = await c.get(f"/api/events/{event_id}/venue",
                              headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert plain.status_code == 200
    assert "immutable" in plain.headers["cache-control"]
    doc = plain.json()
    assert doc["seat_count"] == 321 and len(doc["seats"]["seat_id"]) == 321
    assert doc["seats"]["seat_id"] == list(range(1, 322))
    assert zipped.headers["content-encoding"] == "gzip"
    assert json.loads(zipped.content) == doc  # httpx decodes gzip transparently
    raw = await conn.fetchval("SELECT body_gzip FROM venue_layouts WHERE event_id = $1", event_id)
    assert json.loads(gzip.decompress(raw)) == doc
    assert again.status_code == 304 and again.content == b""
    assert again_gz.status_code == 304
    assert other.status_code == 200  # another representation's validator
    assert zipped.headers["etag"] != plain.headers["etag"]
    assert "content-encoding" not in refused.headers


async def test_event_creation_is_idempotent_with_a_key(api: Api, conn: Any) -> None:
    import asyncio

    async with api.client() as c:
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Idempotency-Key": "gala-1"}
        body = {"name": "Gala", "seats": 50}
        first, twin = await asyncio.gather(
            c.post("/api/ops/events", json=body, headers=auth),
            c.post("/api/ops/events", json=body, headers=auth))
        again = await c.post("/api/ops/events", json=body, headers=auth)
        other = await c.post("/api/ops/events", json={"name": "Other", "seats": 50},
                             headers=auth)
        bad = await c.post("/api/ops/events", json={"name": "x", "seats": 0},
                           headers={**auth, "Idempotency-Key": "bad-1"})
        retry_fixed = await c.post("/api/ops/events", json={"name": "x", "seats": 5},
                                   headers={**auth, "Idempotency-Key": "bad-1"})
    assert {first.status_code, twin.status_code, again.status_code} == {201}
    assert first.json() == twin.json() == again.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    assert bad.status_code == 400
    assert retry_fixed.status_code == 201  # a failed create does not consume its key
    assert await conn.fetchval("SELECT count(*) FROM events") == 2
    await audit_clean(conn)
