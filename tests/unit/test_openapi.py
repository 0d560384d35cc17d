"""core.openapi against core's app: the document describes exactly the routes it serves.

Building the app does not connect to anything (the pool is made in the lifespan, which these
tests never run).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from onsale.compose import Tiers, app_for
from onsale.core.openapi import CORE_API
from onsale.kernel.config import Settings
from onsale.kernel.openapi import document
from onsale.kernel.problems import TITLES

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


@pytest.fixture(scope="module")
def app() -> Starlette:
    settings = Settings(
        database_url="postgresql://unused/x", redis_url=None,
        secret_key="unit-test-secret-0123456789", admin_token="unit-test-admin-0123456789",
    )
    return app_for(Tiers(core=True), settings)


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return document([CORE_API])


def app_operations(app: Starlette) -> set[tuple[str, str]]:
    pairs = set()
    for route in app.routes:
        assert isinstance(route, Route), f"unexpected route type {type(route).__name__}"
        assert route.methods, f"{route.path} accepts every method"
        for method in route.methods:
            if method != "HEAD":
                # path_format drops any {name:converter} suffix, as OpenAPI paths do.
                pairs.add((route.path_format, method.lower()))
    return pairs


def doc_operations(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (path, method)
        for path, item in doc["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }


def walk(node: Any, where: str = "#") -> Iterator[tuple[str, Any]]:
    yield where, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{where}/{i}")


def refs(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(where, node["$ref"]) for where, node in walk(doc)
            if isinstance(node, dict) and "$ref" in node]


def test_app_builds_without_connecting(app: Starlette) -> None:
    assert app.state.shared.settings.database_url == "postgresql://unused/x"
    assert app.state.shared.sessions.max_age == 12 * 3600
    assert app.state.shared.db is None  # no pool before the lifespan runs
    assert not hasattr(app.state, "core")


def test_routes_and_document_match(app: Starlette, doc: dict[str, Any]) -> None:
    served = app_operations(app)
    documented = doc_operations(doc)
    assert served == documented, (
        f"served but undocumented: {sorted(served - documented)}; "
        f"documented but not served: {sorted(documented - served)}"
    )


def test_the_comparison_sees_every_route(app: Starlette, doc: dict[str, Any]) -> None:
    served = app_operations(app)
    assert ("/api/events/{event_id}/holds", "post") in served
    assert ("/api/session", "delete") in served
    assert len(served) == sum(len(set(r.methods) - {"HEAD"}) for r in app.routes)
    assert not any(method == "head" for _, method in served)
    assert len(doc_operations(doc)) == sum(
        1 for item in doc["paths"].values() for m in item if m in HTTP_METHODS
    )


def test_no_route_is_served_twice(app: Starlette) -> None:
    seen: set[tuple[str, str]] = set()
    for route in app.routes:
        assert isinstance(route, Route)
        for method in route.methods or ():
            key = (route.path_format, method)
            assert key not in seen, key
            seen.add(key)


def test_path_parameters_are_declared(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        names = set(re.findall(r"{(\w+)}", path))
        for method, op in item.items():
            declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert declared == names, (path, method)
            for p in op.get("parameters", []):
                if p["in"] == "path":
                    assert p["required"] is True


def test_every_ref_resolves(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    found = refs(doc)
    assert found, "the document has no $ref at all"
    prefix = "#/components/schemas/"
    for where, ref in found:
        assert ref.startswith(prefix), (where, ref)
        assert ref[len(prefix):] in schemas, (where, ref)


def test_ref_checker_catches_a_dangling_ref(doc: dict[str, Any]) -> None:
    broken = json.loads(json.dumps(doc))
    broken["components"]["schemas"]["Hold"]["properties"]["x"] = {
        "$ref": "#/components/schemas/Nope"
    }
    schemas = broken["components"]["schemas"]
    dangling = [r for _, r in refs(broken) if r.split("/")[-1] not in schemas]
    assert dangling == ["#/components/schemas/Nope"]


def test_every_schema_is_used(doc: dict[str, Any]) -> None:
    used = {ref.rsplit("/", 1)[-1] for _, ref in refs(doc)}
    assert used == set(doc["components"]["schemas"])


def test_every_operation_has_responses(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert op.get("summary"), (path, method)
            assert op["responses"], (path, method)
            for status, response in op["responses"].items():
                assert re.fullmatch(r"[1-5]\d\d", status), (path, method, status)
                assert response.get("description"), (path, method, status)


def test_documented_problem_codes_exist(doc: dict[str, Any]) -> None:
    seen = 0
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status, response in op["responses"].items():
                content = response.get("content", {})
                if "application/problem+json" not in content:
                    continue
                assert int(status) >= 400, (path, method, status)
                codes = response["description"].split("one of: ", 1)[1].split(", ")
                for code in codes:
                    seen += 1
                    assert code in TITLES, (path, method, status, code)
    assert seen > 10


def test_security_schemes_resolve(doc: dict[str, Any]) -> None:
    schemes = doc["components"]["securitySchemes"]
    for item in doc["paths"].values():
        for op in item.values():
            for requirement in op.get("security", []):
                assert set(requirement) <= set(schemes)


def test_document_is_json_and_3_1(doc: dict[str, Any]) -> None:
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["title"] and doc["info"]["version"]
    assert json.loads(json.dumps(doc)) == doc


async def test_openapi_endpoint_serves_the_document(app: Starlette,
                                                    doc: dict[str, Any]) -> None:
    import httpx

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://t") as c:
        response = await c.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == doc


async def test_405_allow_lists_every_documented_method(app: Starlette,
                                                       doc: dict[str, Any]) -> None:
    """In-process ASGI call (no lifespan, so no database): a method the path does not serve is
    405 and, per RFC 9110 §15.5.6, Allow lists the methods the path does serve."""
    import httpx

    transport = httpx.ASGITransport(app=app)
    wrong = []
    async with httpx.AsyncClient(transport=transport, base_url="http://unit") as client:
        for path, item in doc["paths"].items():
            url = path.replace("{event_id}", "1").replace(
                "{hold_id}", "00000000-0000-0000-0000-000000000000"
            )
            response = await client.request("PUT", url)
            assert response.status_code == 405, path
            assert response.headers["content-type"] == "application/problem+json"
            expected = {m.upper() for m in item}
            if "GET" in expected:
                expected.add("HEAD")
            allow = {m.strip() for m in response.headers.get("allow", "").split(",") if m}
            if allow != expected:
                wrong.append(f"{path}: Allow {sorted(allow)}, serves {sorted(expected)}")
    assert not wrong, wrong


def test_worker_role_needs_no_signing_secrets() -> None:
    from onsale.compose import build_app
    from onsale.kernel.config import ConfigError

    env = {"DATABASE_URL": "postgresql://unused/x"}
    worker = build_app("worker", Settings.from_env(env, require_secrets=False))
    paths = {getattr(r, "path", None) for r in worker.routes}
    assert {"/metrics", "/healthz"} <= paths
    with pytest.raises(ConfigError):
        Settings.from_env(env)
