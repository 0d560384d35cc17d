"""The simulator's HTTP interface (Starlette): thin handlers over ``psp.service``."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from onsale.kernel.http_metrics import HttpMetrics
from onsale.psp import errors, events, faults, form, idempotency, pages, params
from onsale.psp.config import PspConfig
from onsale.psp.errors import ApiError
from onsale.psp.faults import FaultState
from onsale.psp.metrics import Observed, registry_for
from onsale.psp.middleware import BrowserTokenization, FaultMiddleware, SimulatorHeader
from onsale.psp.service import Reply, Service
from onsale.psp.store import Store
from onsale.psp.webhooks import Dispatcher, poster

log = logging.getLogger("psp")
SEARCH_LIMIT = 100
LIST_LIMIT = 1000


class Simulator:
    """What the handlers share; the store and the background tasks live in the lifespan."""

    def __init__(self, config: PspConfig, clock: Callable[[], float], rng: random.Random,
                 webhook_transport: httpx.AsyncBaseTransport | None) -> None:
        self.config = config
        self.clock = clock
        self.rng = rng
        self.webhook_transport = webhook_transport
        self.faults = FaultState()
        self.scope = idempotency.scope(config.secret_key)
        self.secret = f"Bearer {config.secret_key}".encode()
        self.publishable = f"Bearer {config.publishable_key}".encode()
        self.sim = f"Bearer {config.sim_key}".encode() if config.sim_key else None
        self._service: Service | None = None
        self.dispatcher: Dispatcher | None = None

    @property
    def service(self) -> Service:
        if self._service is None:
            raise RuntimeError("the simulator is not started (run the app's lifespan)")
        return self._service

    def authenticate(self, request: Request) -> None:
        """The secret key, ``Authorization: Bearer sk_…``; the publishable key is refused."""
        given = request.headers.get("authorization", "").encode()
        if hmac.compare_digest(given, self.secret):
            return
        if hmac.compare_digest(given, self.publishable):
            raise errors.publishable_key_refused()
        raise errors.authentication()

    def authenticate_tokenization(self, request: Request, body: dict[str, Any]) -> None:
        """``POST /v1/payment_methods`` also takes the publishable key, as a Bearer
        token or (as Stripe.js sends it) the ``key`` parameter."""
        given = request.headers.get("authorization", "").encode()
        key = body.get("key")
        if (hmac.compare_digest(given, self.secret) or hmac.compare_digest(given, self.publishable)
                or (isinstance(key, str) and not given
                    and hmac.compare_digest(key.encode(), self.config.publishable_key.encode()))):
            return
        raise errors.authentication()

    def authenticate_sim(self, request: Request) -> None:
        """``/_sim/*``: ``Authorization: Bearer <ONSALE_PSP_SIM_KEY>``, never an API key."""
        given = request.headers.get("authorization", "").encode()
        if self.sim is None or not hmac.compare_digest(given, self.sim):
            raise errors.sim_key_required()

    def notify(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.notify()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        store = Store(self.config.database)
        self._service = Service(store, self.config, self.clock, self.notify)
        if self.config.webhook_url is not None:
            self.dispatcher = Dispatcher(store, self.config, lambda: self.faults.webhooks,
                                         self.rng, poster(self.config, self.webhook_transport))
            self.dispatcher.start()
        sweeper = asyncio.create_task(self._sweep(), name="psp-sweeper")
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            if self.dispatcher is not None:
                await self.dispatcher.stop()
                self.dispatcher = None
            self._service = None
            store.close()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.config.sweep_interval)
            try:
                self.service.sweep()
            except Exception:  # keep sweeping; the next round may succeed
                log.exception("psp sweep failed")


def _sim(request: Request) -> Simulator:
    sim: Simulator = request.app.state.sim
    return sim


def _page(html: str, status: int = 200) -> Response:
    return HTMLResponse(html, status, headers=pages.HEADERS)


def _json(payload: Any, status: int = 200) -> Response:
    return Response(events.dumps(payload), status, media_type="application/json")


def _reply(reply: Reply) -> Response:
    headers = {"Idempotent-Replayed": "true"} if reply.replayed else None
    return Response(reply.body, reply.status, headers=headers, media_type="application/json")


async def _form(request: Request) -> dict[str, Any]:
    """The POST body: form-encoded with bracket notation (``psp.form``), as the SDK sends."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in ("", "application/x-www-form-urlencoded"):
        raise errors.invalid(None, "The request body must be application/x-www-form-urlencoded "
                             f"(got {kind}).")
    raw = await request.body()
    try:
        return form.parse(raw)
    except UnicodeDecodeError:
        raise errors.invalid(None, "The request body is not UTF-8.") from None


async def _write(request: Request, parse: Callable[[dict[str, Any]], Any],
                 operation: Callable[[Service, Any, float], tuple[int, dict[str, Any]]],
                 *, tokenization: bool = False) -> Response:
    """A POST: auth, parameters, then the operation, once per Idempotency-Key if given."""
    sim = _sim(request)
    body = await _form(request)
    if tokenization:
        sim.authenticate_tokenization(request, body)
    else:
        sim.authenticate(request)
    key = request.headers.get("idempotency-key", "").strip() or None
    if key is not None and len(key) > 255:
        raise errors.invalid("Idempotency-Key", "Idempotency-Key is at most 255 characters.")
    parsed = parse(body)
    fingerprint = idempotency.fingerprint("POST", request.url.path, body)
    service = sim.service
    request_id = request.scope.get("psp.request_id") or events.new_id("req")
    return _reply(service.idempotent(sim.scope, key, fingerprint, request_id,
                                     lambda now: operation(service, parsed, now)))


def _today(sim: Simulator) -> tuple[int, int]:
    now = time.gmtime(sim.clock())
    return now.tm_year, now.tm_mon


async def create_payment_method(request: Request) -> Response:
    sim = _sim(request)
    year, month = _today(sim)
    return await _write(request, lambda body: params.card(body, year, month),
                        lambda svc, card, now: svc.create_payment_method(card, now),
                        tokenization=True)


async def retrieve_payment_method(request: Request) -> Response:
    sim = _sim(request)
    sim.authenticate(request)
    return _json(sim.service.retrieve_payment_method(request.path_params["id"]).public())


async def create_intent(request: Request) -> Response:
    return await _write(request, params.create, lambda svc, p, now: svc.create(p, now))


async def capture_intent(request: Request) -> Response:
    intent_id = request.path_params["id"]
    return await _write(request, params.capture,
                        lambda svc, amount, now: svc.capture(intent_id, amount, now))


async def cancel_intent(request: Request) -> Response:
    intent_id = request.path_params["id"]
    return await _write(request, params.cancel,
                        lambda svc, reason, now: svc.cancel(intent_id, reason, now))


async def retrieve_intent(request: Request) -> Response:
    sim = _sim(request)
    sim.authenticate(request)
    return _json(sim.service.public(sim.service.retrieve(request.path_params["id"])))


async def search_intents(request: Request) -> Response:
    sim = _sim(request)
    sim.authenticate(request)
    key, value = params.search_query(request.query_params.get("query"))
    limit = _limit(request, SEARCH_LIMIT)
    found = sim.service.search(key, value, limit + 1)
    return _json({"object": "search_result", "url": "/v1/payment_intents/search",
                  "has_more": len(found) > limit, "next_page": None,
                  "data": [sim.service.public(intent) for intent in found[:limit]]})


async def three_ds_page(request: Request) -> Response:
    sim = _sim(request)
    intent_id = request.path_params["id"]
    try:
        intent = sim.service.retrieve(intent_id)
    except ApiError:
        return _page(pages.not_found(intent_id), 404)
    if intent.status == "requires_action":
        return _page(pages.challenge(intent))
    return _page(pages.done(intent))


async def three_ds_answer(request: Request) -> Response:
    sim = _sim(request)
    intent_id = request.path_params["id"]
    raw = await request.body()
    result: Any = None
    if "json" in request.headers.get("content-type", ""):
        with contextlib.suppress(ValueError, RecursionError):
            body = json.loads(raw)
            result = body.get("result") if isinstance(body, dict) else None
    else:
        result = parse_qs(raw.decode("utf-8", "replace")).get("result", [""])[0]
    if result not in ("succeed", "fail"):
        return _page(pages.bad_answer(), 400)
    try:
        intent = sim.service.authenticate(intent_id, result == "succeed")
    except ApiError:
        return _page(pages.not_found(intent_id), 404)
    if intent.return_url:
        return RedirectResponse(pages.return_to(intent), 303)
    return _page(pages.done(intent))


async def healthz(request: Request) -> Response:
    return _json({"status": "ok"})


def _limit(request: Request, maximum: int) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return maximum
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 9) or not 1 <= int(raw) <= maximum:
        raise errors.invalid("limit", f"limit must be an integer between 1 and {maximum}.")
    return int(raw)


async def sim_faults(request: Request) -> Response:
    sim = _sim(request)
    sim.authenticate_sim(request)
    if request.method == "PUT":
        sim.faults = faults.parse(params.json_body(await request.body()))
        sim.notify()
    elif request.method == "DELETE":
        sim.faults = FaultState()
        sim.notify()
    return _json(sim.faults.public())


async def sim_intents(request: Request) -> Response:
    sim = _sim(request)
    sim.authenticate_sim(request)
    key = request.query_params.get("metadata_key")
    value = request.query_params.get("metadata_value")
    limit = _limit(request, LIST_LIMIT)
    if (key is None) != (value is None):
        raise errors.invalid("metadata_key", "Give both metadata_key and metadata_value.")
    found = (sim.service.search(key, value, limit) if key is not None and value is not None
             else sim.service.recent(limit))
    return _json({"object": "list", "data": [sim.service.public(i) for i in found]})


async def sim_stats(request: Request) -> Response:
    sim = _sim(request)
    sim.authenticate_sim(request)
    return _json(sim.service.stats())


async def sim_webhooks(request: Request) -> Response:
    sim = _sim(request)
    sim.authenticate_sim(request)
    limit = _limit(request, LIST_LIMIT)
    with sim.service.store.transaction():
        deliveries = sim.service.store.deliveries(limit)
    return _json({"object": "list", "endpoint": sim.config.webhook_url, "data": deliveries})


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _json(exc.body(), exc.status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code in (404, 405):  # Stripe answers an unknown method+path 404
        return _json(errors.not_found_url(request.method, request.url.path).body(), 404)
    return _json(ApiError(exc.status_code, "invalid_request_error", str(exc.detail),
                          code="request_invalid").body(), exc.status_code)


class PspApp(Starlette):
    """Starlette with the fault middleware outermost, where it sees the server's
    own ``send`` (needed to drop a connection for ``lost_response``)."""

    fault_middleware: Callable[[Any], Any] | None = None
    http_metrics: HttpMetrics | None = None

    def build_middleware_stack(self) -> Any:
        stack: Any = SimulatorHeader(BrowserTokenization(super().build_middleware_stack()))
        if self.http_metrics is not None:
            stack = Observed(stack, self.http_metrics, self.routes)
        return self.fault_middleware(stack) if self.fault_middleware is not None else stack


def build_psp_app(config: PspConfig, *, clock: Callable[[], float] = time.time,
                  rng: random.Random | None = None,
                  webhook_transport: httpx.AsyncBaseTransport | None = None) -> Starlette:
    """The simulator as an ASGI app; run its lifespan to open the store and start
    the sweeper and the webhook dispatcher. ``clock`` (unix seconds) drives
    ``created``, authorization lapses and key retention; ``rng`` the faults."""
    sim = Simulator(config, clock, rng or random.Random(), webhook_transport)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with sim.running():
            yield

    app = PspApp(routes=[
        Route("/healthz", healthz),
        Route("/v1/payment_methods", create_payment_method, methods=["POST"]),
        Route("/v1/payment_methods/{id}", retrieve_payment_method),
        Route("/v1/payment_intents", create_intent, methods=["POST"]),
        Route("/v1/payment_intents/search", search_intents),
        Route("/v1/payment_intents/{id}", retrieve_intent),
        Route("/v1/payment_intents/{id}/capture", capture_intent, methods=["POST"]),
        Route("/v1/payment_intents/{id}/cancel", cancel_intent, methods=["POST"]),
        Route("/3ds/{id}", three_ds_page),
        Route("/3ds/{id}", three_ds_answer, methods=["POST"]),
        Route("/_sim/faults", sim_faults, methods=["GET", "PUT", "DELETE"]),
        Route("/_sim/intents", sim_intents),
        Route("/_sim/stats", sim_stats),
        Route("/_sim/webhooks", sim_webhooks),
    ], exception_handlers={ApiError: _api_error, HTTPException: _http_error},
        lifespan=lifespan)
    app.state.sim = sim
    # psp/metrics.py: served by `onsale psp` on ONSALE_PSP_METRICS_PORT when set
    app.state.metrics_registry, app.http_metrics = registry_for(lambda: sim.service.stats())
    app.fault_middleware = lambda inner: FaultMiddleware(inner, config.secret_key,
                                                         lambda: sim.faults, sim.rng)
    return app
