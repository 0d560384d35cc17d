"""kernel.fast_lane: a hot route answers exactly as it would through Starlette's layers."""

from __future__ import annotations

import re
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from onsale.kernel.errors import error_handlers
from onsale.kernel.fast_lane import App, HotRoute
from onsale.kernel.problems import Problem
from onsale.kernel.security import SecurityPolicy, security_middleware

POLICY = SecurityPolicy(allowed_origins=frozenset({"http://shop.example"}), hsts=True,
                        csp="default-src 'self'")
calls: list[str] = []


async def thing(request: Request) -> Response:
    calls.append(request.method)
    key = request.path_params["key"]
    if key == "missing":
        raise Problem(404, "thing_not_found")
    if key == "busy":
        raise Problem(429, "rate_limited", retry_after="7")
    if key == "bug":
        raise RuntimeError("a bug")
    return JSONResponse({"key": key, "app": request.app is not None},
                        headers={"Cache-Control": "no-store"})


def _app(*, hot: bool) -> Any:
    routes = [Route("/things/{key}", thing, methods=["GET", "POST"])]
    hot_routes = ([HotRoute("/things/{key}", "GET", thing),
                   HotRoute("/things/{key}", "POST", thing)] if hot else [])
    return App(routes=routes, exception_handlers=error_handlers(),
               middleware=[security_middleware(None, POLICY)],  # type: ignore[arg-type]
               hot=hot_routes, policy=POLICY)


RID = "edge-7f3a.42"


def _answer(hot: bool, method: str, path: str, **kw: Any) -> tuple[int, dict[str, str], bytes]:
    """The answer to a request that names its id (echoed either way, checked here)."""
    kw = {**kw, "headers": {"X-Request-ID": RID, **kw.get("headers", {})}}
    with TestClient(_app(hot=hot), raise_server_exceptions=False) as client:
        r = client.request(method, path, **kw)
    headers = {k: v for k, v in r.headers.items() if k not in ("content-length", "date")}
    assert headers.pop("x-request-id") == RID
    return r.status_code, headers, r.content


@pytest.mark.parametrize("hot", [True, False])
def test_a_request_without_a_usable_id_gets_a_new_one_each_time(hot: bool) -> None:
    with TestClient(_app(hot=hot)) as client:
        ids = [client.get("/things/a1", headers=h).headers["x-request-id"]
               for h in ({}, {}, {"X-Request-ID": "two words"}, {"X-Request-ID": "x" * 129})]
    assert len(set(ids)) == 4 and all(re.fullmatch(r"[0-9a-f]{16}-[0-9a-f]+", i) for i in ids)


@pytest.mark.parametrize(("method", "path", "kw"), [
    ("GET", "/things/a1", {}),
    ("GET", "/things/missing", {}),
    ("GET", "/things/busy", {}),
    ("POST", "/things/a1", {"headers": {"Origin": "http://shop.example"}}),
    ("POST", "/things/a1", {"headers": {"Origin": "http://evil.example"}}),
    ("POST", "/things/a1", {"headers": {"Sec-Fetch-Site": "cross-site"}}),
    ("GET", "/things/a1/more", {}),
    ("HEAD", "/things/a1", {}),
])
def test_hot_and_layered_answers_are_the_same(method: str, path: str, kw: dict[str, Any]) -> None:
    assert _answer(True, method, path, **kw) == _answer(False, method, path, **kw)


def test_a_bug_is_the_same_500_and_the_lane_adds_the_security_headers_to_it() -> None:
    hot, layered = _answer(True, "GET", "/things/bug"), _answer(False, "GET", "/things/bug")
    assert (hot[0], hot[2]) == (layered[0], layered[2])
    # Starlette's error middleware sits outside the security middleware: its 500 has none.
    assert hot[1] == {**layered[1], **dict((k.decode(), v.decode()) for k, v in POLICY.always)}


def test_the_security_headers_and_the_problem_codes_are_there() -> None:
    status, headers, _ = _answer(True, "GET", "/things/a1")
    assert status == 200
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["strict-transport-security"].startswith("max-age=")
    assert headers["cache-control"] == "no-store"
    status, headers, body = _answer(True, "GET", "/things/busy")
    assert (status, headers["retry-after"]) == (429, "7")
    assert b'"code":"rate_limited"' in body
    status, _, body = _answer(True, "GET", "/things/bug")
    assert status == 500 and b'"code":"internal_error"' in body


def test_a_cross_site_post_is_refused_before_the_handler_runs() -> None:
    calls.clear()
    status, _, body = _answer(True, "POST", "/things/a1", headers={"Origin": "http://evil.example"})
    assert status == 403 and b"cross_site_request" in body
    assert calls == []


def test_the_lane_really_is_taken() -> None:
    app = _app(hot=True)
    seen: list[str] = []
    original = app._serve

    async def spy(route: HotRoute, scope: Any, receive: Any, send: Any, rid: str) -> None:
        seen.append(scope["path"])
        await original(route, scope, receive, send, rid)
    app._serve = spy
    with TestClient(app) as client:
        assert client.get("/things/x").status_code == 200
        assert client.get("/things/x/more").status_code == 404  # not hot: Starlette's 404
    assert seen == ["/things/x"]


def test_a_hot_path_pattern_takes_one_segment_per_parameter() -> None:
    route = HotRoute("/api/events/{event_id}/queue", "GET", thing)
    assert route.pattern.fullmatch("/api/events/12/queue")
    assert not route.pattern.fullmatch("/api/events/12/x/queue")
    assert not route.pattern.fullmatch("/api/events//queue")
    assert not route.pattern.fullmatch("/api/events/12/queue/draw")


@pytest.mark.parametrize("hot", [True, False])
def test_the_access_log_has_one_line_per_request_with_its_id_when_on(
        hot: bool, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    access = logging.getLogger("onsale.access")
    was = access.disabled
    access.disabled = False
    try:
        with caplog.at_level(logging.INFO, logger="onsale.access"), TestClient(
                _app(hot=hot), raise_server_exceptions=False) as client:
            client.get("/things/missing", headers={"X-Request-ID": RID})
    finally:
        access.disabled = was
    (record,) = [r for r in caplog.records if r.name == "onsale.access"]
    assert record.getMessage().startswith("GET /things/missing 404 ")
    from onsale.kernel.logs import REQUEST_ID
    assert REQUEST_ID.get() is None  # the request's context, not the test's


def test_each_request_is_counted_and_timed_by_route_template() -> None:
    from prometheus_client import CollectorRegistry

    from onsale.kernel.http_metrics import HttpMetrics

    registry = CollectorRegistry()
    routes = [Route("/things/{key}", thing, methods=["GET", "POST"])]
    app = App(routes=routes, exception_handlers=error_handlers(),
              middleware=[security_middleware(None, POLICY)],  # type: ignore[arg-type]
              hot=[HotRoute("/things/{key}", "GET", thing)], policy=POLICY,
              http_metrics=HttpMetrics(registry))
    with TestClient(app, raise_server_exceptions=False) as client:
        client.get("/things/a1")  # the fast lane
        client.get("/things/b2")
        client.post("/things/missing", headers={"Origin": "http://shop.example"})  # layered
        client.get("/nothing/here")
        client.get("/things/bug")

    def count(route: str, method: str, status: str) -> float | None:
        return registry.get_sample_value("onsale_http_request_duration_seconds_count",
                                         {"route": route, "method": method,
                                          "status": status})

    assert count("/things/{key}", "GET", "200") == 2
    assert count("/things/{key}", "POST", "404") == 1
    assert count("unmatched", "GET", "404") == 1
    assert count("/things/{key}", "GET", "500") == 1
    assert registry.get_sample_value("onsale_http_request_duration_seconds_count",
                                     {"route": "/things/a1", "method": "GET",
                                      "status": "200"}) is None  # never the path itself


def _quick(scope: Any) -> Response | None:
    """Answers /things/q* from the raw scope; ``/things/qbusy`` raises; others: None."""
    key = scope["path_params"]["key"]
    if key == "qbusy":
        raise Problem(429, "rate_limited", retry_after="3")
    if key.startswith("q"):
        return JSONResponse({"quick": key}, headers={"Cache-Control": "no-store"})
    return None


def _quick_app() -> Any:
    routes = [Route("/things/{key}", thing, methods=["GET"])]
    return App(routes=routes, exception_handlers=error_handlers(),
               middleware=[security_middleware(None, POLICY)],  # type: ignore[arg-type]
               hot=[HotRoute("/things/{key}", "GET", thing, _quick)], policy=POLICY)


def test_a_quick_answer_skips_the_endpoint_and_none_falls_through_to_it() -> None:
    calls.clear()
    with TestClient(_quick_app(), raise_server_exceptions=False) as client:
        quick = client.get("/things/q1")
        assert (quick.status_code, quick.json()) == (200, {"quick": "q1"})
        assert quick.headers["x-content-type-options"] == "nosniff"  # the lane's headers
        assert quick.headers["x-request-id"]
        assert calls == []
        slow = client.get("/things/a1")  # quick said None: the endpoint, with a Request
        assert slow.json() == {"key": "a1", "app": True}
        assert calls == ["GET"]
        busy = client.get("/things/qbusy")  # a quick refusal: the app's problem+json
        assert (busy.status_code, busy.headers["retry-after"]) == (429, "3")
        assert busy.json()["code"] == "rate_limited"
        assert calls == ["GET"]
