"""One purchase followed by its ids across processes (docs/operations.md#logs): the
edge's join, core's hold and checkout, the provider's PaymentIntent, and the webhook
back into core. Each process is real (``onsale serve``, ``onsale psp``) and logs JSON
lines; the test reads what they printed."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from onsale.embedded import EmbeddedPostgres
from tests.conftest import audit_clean
from tests.integration.test_checkout import checkout, new_account, new_event, settle
from tests.stack import APPROVE, COOKIE, Process, connected, eventually, started_stack

JOIN, HOLD, PAY = "purchase-join-1", "purchase-hold-1", "purchase-checkout-1"


def json_lines(proc: Process | None) -> Iterator[dict[str, Any]]:
    assert proc is not None
    for line in list(proc.output):
        if line.startswith("{"):
            yield json.loads(line)


def access_line(proc: Process | None, method: str, path: str) -> dict[str, Any] | None:
    """The process's access-log line for a request, if it has printed it."""
    return next((line for line in json_lines(proc)
                 if line.get("logger") == "onsale.access"
                 and line["message"].startswith(f"{method} {path} ")), None)


async def test_one_purchase_carries_its_ids_from_the_edge_to_the_provider_and_back(
        pg: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONSALE_ACCESS_LOG", "true")  # every process of the stack
    monkeypatch.setenv("ONSALE_LOG_FORMAT", "json")
    async with started_stack(pg, template_db, tmp_path_factory.mktemp("rid")) as stack, \
            connected(stack) as db:
        event_id = await new_event(stack)
        account = await new_account(db)
        cookies = {COOKIE: stack.session_cookie(account)}
        async with httpx.AsyncClient(base_url=stack.edge_url, cookies=cookies) as edge:
            joined = await edge.post(f"/api/events/{event_id}/queue",
                                     headers={"X-Request-ID": JOIN})
        assert joined.status_code == 200 and joined.headers["x-request-id"] == JOIN
        token = joined.json()["admission_token"]

        async with httpx.AsyncClient(base_url=stack.core_url, cookies=cookies, timeout=30,
                                     headers={"Admission-Token": token}) as core:
            held = await core.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1]},
                                   headers={"Idempotency-Key": "h", "X-Request-ID": HOLD})
            assert held.status_code == 201 and held.headers["x-request-id"] == HOLD
            hold_id = held.json()["hold_id"]
            core.headers["X-Request-ID"] = PAY
            paid = await checkout(core, hold_id, APPROVE)
            assert paid.status_code == 201 and paid.headers["x-request-id"] == PAY, paid.text
            del core.headers["X-Request-ID"]
            await settle(core, paid.json(), ("CONFIRMED", "CAPTURED"))
        order_id = paid.json()["order_id"]

        # The provider was told: the intent's metadata names the checkout and the join.
        async with stack.psp_client() as psp:
            found = (await psp.get("/_sim/intents", params={
                "metadata_key": "order_id", "metadata_value": order_id})).json()
        [intent] = found["data"] if isinstance(found, dict) else found
        assert (intent["metadata"]["request_id"], intent["metadata"]["admission"]) == (
            PAY, JOIN)

        # Core's lines: the hold names its request and the join that admitted it, the
        # checkout its own; the webhook's delivery names the purchase it is about.
        hold_line = access_line(stack.core, "POST", f"/api/events/{event_id}/holds")
        assert hold_line is not None
        assert (hold_line["request_id"], hold_line["admission"], hold_line["role"]) == (
            HOLD, JOIN, "core")
        pay_line = access_line(stack.core, "POST", f"/api/holds/{hold_id}/checkout")
        assert pay_line is not None and (pay_line["request_id"], pay_line["admission"]) == (
            PAY, JOIN)
        webhook = await eventually(lambda: _async(access_line(
            stack.core, "POST", "/api/webhooks/payments")))
        assert (webhook["request_id"], webhook["admission"], webhook["order_id"]) == (
            PAY, JOIN, order_id)
        join_line = access_line(stack.edge, "POST", f"/api/events/{event_id}/queue")
        assert join_line is not None and join_line["request_id"] == JOIN
        assert join_line["level"] == "INFO" and "time" in join_line
        await audit_clean(db)


async def _async(value: Any) -> Any:
    return value


def test_an_id_from_elsewhere_is_taken_only_when_plausible() -> None:
    from onsale.core.webhooks import purchase_ids
    from onsale.psp.webhooks import purchase_request_id

    order = str(uuid.uuid4())
    intent = {"metadata": {"request_id": "abc-1", "admission": "forged\nline",
                           "order_id": order, "other": "x"}}
    assert purchase_ids(intent) == {"request_id": "abc-1", "order_id": order}
    assert purchase_ids({"metadata": "not a map"}) == {}
    body = json.dumps({"data": {"object": {"metadata": {"request_id": "abc-1"}}}}).encode()
    assert purchase_request_id(body) == "abc-1"
    assert purchase_request_id(b"{}") is None
    assert purchase_request_id(json.dumps(
        {"data": {"object": {"metadata": {"request_id": "a b"}}}}).encode()) is None
