"""kernel/ops_listener.py: metrics, health and the API document on the ops port only."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket, WebSocketDisconnect

from onsale.kernel.errors import error_handlers
from onsale.kernel.fast_lane import App, HotRoute
from onsale.kernel.ops_listener import OPS, PUBLIC, Listener, OpsSettings
from onsale.kernel.security import SecurityPolicy, security_middleware
from onsale.kernel.settings import ConfigError

POLICY = SecurityPolicy(allowed_origins=frozenset(), hsts=False, csp="default-src 'self'")


async def page(request: Request) -> Response:
    return JSONResponse({"path": request.url.path})


async def metrics(request: Request) -> Response:
    return PlainTextResponse("onsale_up 1\n")


async def socket(ws: WebSocket) -> None:
    await ws.accept()
    await ws.send_text("hello")
    await ws.close()


def _app() -> Any:
    routes = [Route("/api/events/{e}", page), Route("/metrics", metrics),
              Route("/readyz", page), Route("/healthz", page), Route("/openapi.json", page),
              WebSocketRoute("/ws", socket)]
    return App(routes=routes, exception_handlers=error_handlers(),
               middleware=[security_middleware(None, POLICY)],  # type: ignore[arg-type]
               hot=[HotRoute("/api/events/{e}", "GET", page)], policy=POLICY)


@pytest.mark.parametrize("path", ["/metrics", "/readyz", "/healthz", "/openapi.json"])
def test_the_ops_paths_answer_on_the_ops_listener_only(path: str) -> None:
    app = _app()
    with TestClient(Listener(app, PUBLIC)) as public, TestClient(Listener(app, OPS)) as ops:
        refused = public.get(path, headers={"X-Request-ID": "r-1"})
        assert refused.status_code == 404 and refused.json()["code"] == "not_found"
        assert refused.headers["x-request-id"] == "r-1"
        assert refused.headers["x-content-type-options"] == "nosniff"
        assert ops.get(path).status_code == 200


def test_the_ops_listener_serves_nothing_else_and_no_socket() -> None:
    app = _app()
    with TestClient(Listener(app, PUBLIC)) as public, TestClient(Listener(app, OPS)) as ops:
        for hot_or_not in ("/api/events/1", "/api/events/1/x"):
            assert ops.get(hot_or_not).status_code == 404
        assert public.get("/api/events/1").json() == {"path": "/api/events/1"}
        with public.websocket_connect("/ws") as ws:
            assert ws.receive_text() == "hello"
        with pytest.raises(WebSocketDisconnect) as closed, ops.websocket_connect("/ws"):
            pass
        assert closed.value.code == 1008


def test_an_untagged_app_serves_every_path() -> None:
    with TestClient(_app()) as client:  # a test's in-process client
        assert client.get("/metrics").status_code == 200
        assert client.get("/api/events/2").status_code == 200


def test_the_ops_port_is_the_public_port_plus_1000_unless_set() -> None:
    assert OpsSettings.from_env({}).port_for(8000) == 9000
    assert OpsSettings.from_env({"ONSALE_OPS_PORT": "9102"}).port_for(8000) == 9102
    assert OpsSettings.from_env({}).ops_host == "127.0.0.1"
    with pytest.raises(ConfigError, match="ONSALE_OPS_PORT"):
        OpsSettings.from_env({}).port_for(65000)
    with pytest.raises(ConfigError, match="ONSALE_OPS_PORT"):
        OpsSettings.from_env({"ONSALE_OPS_PORT": "8000"}).port_for(8000)
    with pytest.raises(ConfigError):
        OpsSettings.from_env({"ONSALE_OPS_PORT": "70000"})
