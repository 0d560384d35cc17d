"""The seat map behind the admission gate, as the ``seatmap`` role serves it: the
snapshot and the WebSocket each refuse a missing, foreign or revoked admission
with its own code, and serve an admitted shopper (docs/edge.md#the-gate)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from onsale.compose import build_app
from onsale.embedded import EmbeddedValkey
from onsale.kernel.sessions import COOKIE
from tests.conftest import Api, make_settings
from tests.integration.edge_support import Visitor, edge_api, new_accounts
from tests.seatmap_support import seatmap_settings, serving
from tests.stack import eventually


def _headers(api: Api, account: uuid.UUID | None, token: str | None) -> dict[str, str]:
    headers = {}
    if account is not None:
        headers["Cookie"] = f"{COOKIE}={api.session_cookie(account)}"
    if token is not None:
        headers["Admission-Token"] = token
    return headers


async def _get(address: str, event_id: int, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(f"http://{address}/api/events/{event_id}/seatmap", headers=headers)


async def _ws_refusal(address: str, event_id: int, headers: dict[str, str]) -> tuple[int, str]:
    with pytest.raises(InvalidStatus) as denied:
        await connect(f"ws://{address}/ws/events/{event_id}/seatmap", additional_headers=headers)
    response = denied.value.response
    return response.status_code, json.loads(response.body or b"{}").get("code", "")


async def test_the_seatmap_role_admits_only_admitted_shoppers(
        db_url: str, valkey: EmbeddedValkey, redis_client: Any, conn: Any) -> None:
    # redis_client empties Valkey first: seat maps left by earlier tests would answer.
    async with edge_api(db_url, valkey.url) as api:
        event_a = await api.create_event(seats=30)
        event_b = await api.create_event(seats=30)
        alice, bob = await new_accounts(conn, 2)
        phone = Visitor(api, alice, event_a)
        await phone.join()
        assert phone.token is not None
        app = build_app("seatmap", make_settings(db_url, redis_url=valkey.url),
                        seatmap=seatmap_settings())
        async with serving(app) as address:
            def refused(r: httpx.Response, status: int, code: str) -> None:
                assert (r.status_code, r.json()["code"]) == (status, code), r.text

            refused(await _get(address, event_a, _headers(api, None, phone.token)),
                    401, "authentication_required")
            refused(await _get(address, event_a, _headers(api, alice, None)),
                    403, "admission_required")
            refused(await _get(address, event_a, _headers(api, bob, phone.token)),
                    403, "admission_wrong_account")
            refused(await _get(address, event_b, _headers(api, alice, phone.token)),
                    403, "admission_wrong_event")
            refused(await _get(address, event_a, _headers(api, alice, phone.token + "x")),
                    403, "admission_invalid")
            ok = await _get(address, event_a, _headers(api, alice, phone.token))
            assert ok.status_code == 200, ok.text
            # Browsers carry the token in the event's cookie instead of a header.
            cookie = {"Cookie": f"{COOKIE}={api.session_cookie(alice)}; "
                                f"onsale_admission_{event_a}={phone.token}"}
            assert (await _get(address, event_a, cookie)).status_code == 200

            assert await _ws_refusal(address, event_a, _headers(api, alice, None)) == (
                403, "admission_required")
            assert await _ws_refusal(address, event_a, _headers(api, bob, phone.token)) == (
                403, "admission_wrong_account")
            ws = await connect(f"ws://{address}/ws/events/{event_a}/seatmap",
                               additional_headers=_headers(api, alice, phone.token))
            first = json.loads(await ws.recv())  # no change capture here: poll instead
            assert first["type"] == "unavailable"
            await ws.close()

            # Alice enters on a laptop: the phone's session stops seeing the map.
            laptop = Visitor(api, alice, event_a)
            await laptop.join()
            assert laptop.token is not None and laptop.token != phone.token

            async def phone_revoked() -> bool:
                r = await _get(address, event_a, _headers(api, alice, phone.token))
                return r.status_code == 403 and r.json()["code"] == "admission_revoked"

            await eventually(phone_revoked, within=10)
            assert await _ws_refusal(address, event_a, _headers(api, alice, phone.token)) == (
                403, "admission_revoked")
            assert (await _get(address, event_a,
                               _headers(api, alice, laptop.token))).status_code == 200
