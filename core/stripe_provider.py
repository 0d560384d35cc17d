"""The payment provider through the official ``stripe`` SDK (issue 13).

Same interface as ``PspClient`` (``authorize``, ``capture``, ``cancel``, ``retrieve``,
``find_by_operation``, ``close``), each answering a ``ProviderAnswer``: a status and
Stripe's JSON object, or no status at all when nothing came back (a timeout, a reset,
a response lost mid-way: UNKNOWN to ``core/payment_rules.py``). The operation id is
the request's Idempotency-Key; the SDK's own network retries are off (our operation
records and the reconciler own retries); every call is bounded by the HTTP client's
timeout and runs outside any database transaction.

``ONSALE_STRIPE_API_BASE`` points the SDK at the simulator in development and tests,
and is Stripe's own API otherwise: the same code path for both.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
import stripe

from onsale.core.payment_rules import ProviderAnswer
from onsale.core.psp_client import SIMULATOR_HEADER, SIMULATOR_REFUSED
from onsale.kernel import logs

log = logging.getLogger("onsale.payments")


def _marked(headers: Mapping[str, str] | None) -> bool:
    return headers is not None and any(k.lower() == SIMULATOR_HEADER for k in headers)


def answer_from_error(exc: stripe.StripeError) -> ProviderAnswer:
    """What an SDK error means for core: a connection error (timeouts included) is no
    answer; an HTTP answer keeps its status and Stripe's error object."""
    if isinstance(exc, stripe.APIConnectionError) or exc.http_status is None:
        return ProviderAnswer(None, None, f"{type(exc).__name__}: {exc}"[:200])
    body = exc.json_body if isinstance(exc.json_body, dict) else None
    return ProviderAnswer(int(exc.http_status), body)


def answer_from_object(obj: Any) -> ProviderAnswer:
    """A successful SDK call: the status it came with and the object as plain JSON: the
    response's own parsed body (the SDK has parsed it once already), not the object
    converted back (``to_dict`` walks every nested object again; issue 29)."""
    response = getattr(obj, "last_response", None)
    status = int(response.code) if response is not None else 200
    body = getattr(response, "data", None)
    if not isinstance(body, dict):
        body = obj.to_dict() if hasattr(obj, "to_dict") else None
    if not isinstance(body, dict):
        return ProviderAnswer(None, None, "unreadable success body")
    return ProviderAnswer(status, body)


class StripeProvider:
    def __init__(self, api_base: str, secret_key: str, timeout: float, *,
                 allow_simulator: bool = False) -> None:
        """Without ``allow_simulator`` an answer from the simulator counts as no
        answer (UNKNOWN): nothing is ever sold on the simulator's word."""
        self.allow_simulator = allow_simulator
        self._warned = False
        # aiohttp, not httpx: 1.1 ms of CPU per call instead of 2.6-3.3 ms
        # (docs/benchmarks.md#checkouts-end-to-end); the total bounds the body too.
        self.http = stripe.AIOHTTPClient(timeout=aiohttp.ClientTimeout(total=timeout))
        self.client = stripe.StripeClient(
            secret_key, base_addresses={"api": api_base.rstrip("/")},
            max_network_retries=0, http_client=self.http)

    async def close(self) -> None:
        await self.http.close_async()  # type: ignore[no-untyped-call]  # untyped in the SDK

    async def _call(self, call: Awaitable[Any]) -> ProviderAnswer:
        try:
            obj = await call
        except stripe.StripeError as exc:
            if _marked(exc.headers) and not self.allow_simulator:
                return self._refused()
            return answer_from_error(exc)
        response = getattr(obj, "last_response", None)
        if response is not None and _marked(response.headers) and not self.allow_simulator:
            return self._refused()
        return answer_from_object(obj)

    async def _post(self, path: str, params: dict[str, Any], options: Any) -> ProviderAnswer:
        """A POST through the SDK's raw request: the same requestor, retries, errors and
        headers, and the answer's parsed JSON as it came, without building a
        ``StripeObject`` from it that nothing reads (issue 29: 7 % of core's CPU in
        the checkout bench)."""
        try:
            response = await self.client.raw_request_async("post", path, **params, **options)
        except stripe.StripeError as exc:
            if _marked(exc.headers) and not self.allow_simulator:
                return self._refused()
            return answer_from_error(exc)
        if _marked(response.headers) and not self.allow_simulator:
            return self._refused()
        if not isinstance(response.data, dict):
            return ProviderAnswer(None, None, "unreadable success body")
        return ProviderAnswer(int(response.code), response.data)

    def _refused(self) -> ProviderAnswer:
        if not self._warned:
            self._warned = True
            log.error("%s: every payment stays unconfirmed until this is fixed",
                      SIMULATOR_REFUSED)
        return ProviderAnswer(None, None, SIMULATOR_REFUSED[:200])

    async def authorize(self, operation_id: uuid.UUID, order_id: uuid.UUID, amount_minor: int,
                        currency: str, payment_method: str, return_url: str) -> ProviderAnswer:
        # The checkout's request id and the admission's ride in the metadata, so the
        # webhooks about this intent name the purchase (docs/operations.md#logs). Sent
        # once per operation (the reconciler searches, it never creates again), so the
        # idempotent replay's parameters cannot differ.
        metadata = {"order_id": str(order_id), "operation_id": str(operation_id),
                    **_trace(logs.current())}
        return await self._post(
            "/v1/payment_intents",
            {"amount": amount_minor, "currency": currency.lower(),
             "payment_method": payment_method, "capture_method": "manual",
             "confirm": True, "return_url": return_url, "metadata": metadata},
            _options(str(operation_id)))

    async def capture(self, operation_id: uuid.UUID, intent_id: str) -> ProviderAnswer:
        return await self._post(f"/v1/payment_intents/{quote(intent_id, safe='')}/capture",
                                {}, _options(str(operation_id)))

    async def cancel(self, operation_id: uuid.UUID, intent_id: str) -> ProviderAnswer:
        return await self._post(f"/v1/payment_intents/{quote(intent_id, safe='')}/cancel",
                                {}, _options(str(operation_id)))

    async def retrieve(self, intent_id: str) -> ProviderAnswer:
        return await self._call(self.client.v1.payment_intents.retrieve_async(
            intent_id, options=_options()))

    async def find_by_operation(self, operation_id: uuid.UUID) -> ProviderAnswer:
        """Search by the metadata every authorization carries: answers whether the
        provider ever received it, without creating anything."""
        return await self._call(self.client.v1.payment_intents.search_async(
            params={"query": f"metadata['operation_id']:'{operation_id}'"},
            options=_options()))


# The ids of a purchase that travel with it to the provider and back.
TRACE = ("request_id", "admission")


def _trace(ids: Mapping[str, str]) -> dict[str, str]:
    return {name: ids[name] for name in TRACE if name in ids}


def _options(idempotency_key: str | None = None) -> Any:
    """Request options: the idempotency key, and ``X-Request-ID`` when a request is in
    hand (the provider's own logs then name it; Stripe ignores the header)."""
    options: dict[str, Any] = {}
    if idempotency_key is not None:
        options["idempotency_key"] = idempotency_key
    rid = logs.REQUEST_ID.get()
    if rid is not None:
        options["headers"] = {"X-Request-ID": rid}
    return options
