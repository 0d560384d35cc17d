"""The payment provider over HTTP (Stripe-like API; docs/psp.md).

Every POST carries the operation id as its Idempotency-Key, so a retry of
the same operation can never charge twice. Transport failures come back as
an answer with no status (UNKNOWN to core/payment_rules.py), never raised.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import httpx

from onsale.core.payment_rules import ProviderAnswer
from onsale.kernel.config import ConfigError, Settings

log = logging.getLogger("onsale.payments")

# The payment simulator (psp/) marks every response and webhook with this header;
# a real provider never does (docs/security.md#the-payment-simulator-never-takes-real-money).
SIMULATOR_HEADER = "onsale-simulator"
SIMULATOR_REFUSED = ("the payment provider is the onsale simulator; set "
                     "ONSALE_ALLOW_SIMULATOR=true only where no real money is meant to move")


def provider_identity(base_url: str, timeout: float = 3.0) -> str:
    """``simulator``, ``provider`` (it answered, without the mark) or ``unreachable``:
    one GET of the API root, checked at startup by ``onsale serve``."""
    try:
        response = httpx.get(f"{base_url}/", timeout=timeout)
    except httpx.HTTPError:
        return "unreachable"
    return "simulator" if SIMULATOR_HEADER in response.headers else "provider"


def check_provider(settings: Settings, *, timeout: float = 3.0) -> str | None:
    """Refuse to start (``ConfigError``) against the simulator unless
    ONSALE_ALLOW_SIMULATOR is set. An unreachable provider does not stop startup
    (it may be down for a while; sales can still hold seats): the warning is
    returned, and every answer is checked again (``PspClient``)."""
    if settings.psp_url is None or settings.allow_simulator:
        return None
    identity = provider_identity(settings.psp_url, timeout)
    if identity == "simulator":
        raise ConfigError(f"{SIMULATOR_REFUSED} (ONSALE_PSP_URL={settings.psp_url})")
    if identity == "unreachable":
        return (f"the payment provider at {settings.psp_url} did not answer; starting "
                "anyway, and an answer from the onsale simulator will not be trusted")
    return None


class PspClient:
    def __init__(self, base_url: str, api_key: str, timeout: float, *,
                 allow_simulator: bool = False) -> None:
        """Without ``allow_simulator`` an answer from the simulator counts as no
        answer (UNKNOWN): nothing is ever sold on the simulator's word."""
        self.allow_simulator = allow_simulator
        self._warned = False
        self.http = httpx.AsyncClient(
            base_url=base_url, timeout=timeout,
            headers={"Authorization": f"Bearer {api_key}"},
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )

    async def close(self) -> None:
        await self.http.aclose()

    async def _call(self, method: str, path: str, *, key: uuid.UUID | None = None,
                    body: dict[str, Any] | None = None,
                    params: dict[str, str] | None = None) -> ProviderAnswer:
        headers = {"Idempotency-Key": str(key)} if key is not None else {}
        try:
            response = await self.http.request(method, path, json=body, params=params,
                                               headers=headers)
        except httpx.HTTPError as exc:  # timeouts, resets, a response lost mid-way
            return ProviderAnswer(None, None, f"{type(exc).__name__}: {exc}"[:200])
        if SIMULATOR_HEADER in response.headers and not self.allow_simulator:
            if not self._warned:
                self._warned = True
                log.error("%s: every payment stays unconfirmed until this is fixed",
                          SIMULATOR_REFUSED)
            return ProviderAnswer(None, None, SIMULATOR_REFUSED[:200])
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            data = None
        if response.status_code < 300 and not isinstance(data, dict):
            return ProviderAnswer(None, None, "unreadable success body")
        return ProviderAnswer(response.status_code, data if isinstance(data, dict) else None)

    async def authorize(self, operation_id: uuid.UUID, order_id: uuid.UUID, amount_minor: int,
                        currency: str, payment_method: str, return_url: str) -> ProviderAnswer:
        return await self._call("POST", "/v1/payment_intents", key=operation_id, body={
            "amount": amount_minor, "currency": currency.lower(),
            "payment_method": payment_method, "capture_method": "manual", "confirm": True,
            "metadata": {"order_id": str(order_id), "operation_id": str(operation_id)},
            "return_url": return_url,
        })

    async def capture(self, operation_id: uuid.UUID, intent_id: str) -> ProviderAnswer:
        return await self._call("POST", f"/v1/payment_intents/{intent_id}/capture",
                                key=operation_id, body={})

    async def cancel(self, operation_id: uuid.UUID, intent_id: str) -> ProviderAnswer:
        return await self._call("POST", f"/v1/payment_intents/{intent_id}/cancel",
                                key=operation_id, body={})

    async def retrieve(self, intent_id: str) -> ProviderAnswer:
        return await self._call("GET", f"/v1/payment_intents/{intent_id}")

    async def find_by_operation(self, operation_id: uuid.UUID) -> ProviderAnswer:
        """Search by the metadata every authorization carries: answers whether the
        provider ever received it, without creating anything."""
        return await self._call("GET", "/v1/payment_intents/search", params={
            "query": f"metadata['operation_id']:'{operation_id}'"})


def search_hit(answer: ProviderAnswer) -> tuple[bool, dict[str, Any] | None]:
    """(answered, the intent found or None). Not answered means: look again later."""
    if answer.status_code != 200 or answer.body is None:
        return False, None
    data = answer.body.get("data")
    if not isinstance(data, list):
        return False, None
    intents = [d for d in data if isinstance(d, dict)]
    return True, (intents[0] if intents else None)
