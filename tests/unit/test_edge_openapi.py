"""The edge role and the dev app serve exactly what their OpenAPI documents say."""

from __future__ import annotations

import re

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from onsale.compose import ROLES, api_specs, build_app, tiers_for
from onsale.kernel.config import ConfigError, Settings
from onsale.kernel.openapi import document
from onsale.kernel.problems import TITLES
from onsale.web.pages import page_routes

SETTINGS = Settings(database_url="postgresql://unused/x", redis_url="redis://unused:1/0",
                    secret_key="unit-test-secret-0123456789",
                    admin_token="unit-test-admin-0123456789")
METHODS = {"get", "put", "post", "delete", "patch"}


def served(app: Starlette) -> set[tuple[str, str]]:
    return {(r.path_format, m.lower()) for r in app.routes if isinstance(r, Route)
            for m in r.methods or () if m != "HEAD"}


def documented(role: str) -> set[tuple[str, str]]:
    specs = api_specs(tiers_for(role, SETTINGS))
    return {(path, m) for path, item in document(specs)["paths"].items()
            for m in item if m in METHODS}


def test_the_edge_role_serves_its_document() -> None:
    app = build_app("edge", SETTINGS)
    assert [s.name for s in api_specs(tiers_for("edge", SETTINGS))] == ["edge"]
    assert served(app) - {("/healthz", "get"), ("/openapi.json", "get"),
                          ("/metrics", "get"), ("/readyz", "get")} == documented("edge")


def test_the_dev_app_serves_core_and_edge() -> None:
    app = build_app("dev", SETTINGS)  # and the seat map (tests/unit/test_seatmap_roles.py)
    assert [s.name for s in api_specs(tiers_for("dev", SETTINGS))] == ["core", "edge",
                                                                         "seatmap"]
    pages = {(r.path_format, m.lower()) for r in page_routes() if isinstance(r, Route)
             for m in r.methods or () if m != "HEAD"}
    assert ("/", "get") in pages and ("/orders/{order_id}", "get") in pages
    reference = {("/api/reference", "get"), ("/api/reference/openapi.json", "get")}
    assert served(app) - pages - reference - {
        ("/healthz", "get"), ("/metrics", "get"), ("/openapi.json", "get"),
        ("/readyz", "get")} == documented(
        "dev") - {("/healthz", "get"), ("/metrics", "get"), ("/openapi.json", "get"),
                  ("/readyz", "get")}


def test_edge_is_a_role_and_needs_redis() -> None:
    assert "edge" in ROLES
    with pytest.raises(ConfigError):
        build_app("edge", Settings(database_url="postgresql://unused/x", redis_url=None,
                                   secret_key="s" * 20, admin_token="a" * 20))


def test_every_documented_edge_problem_code_has_a_title() -> None:
    for item in document(api_specs(tiers_for("edge", SETTINGS)))["paths"].values():
        for op in item.values():
            for response in op["responses"].values():
                if "application/problem+json" in response.get("content", {}):
                    for code in response["description"].split("one of: ", 1)[1].split(", "):
                        assert code in TITLES, code


def test_the_edge_document_references_only_its_schemas() -> None:
    """Every component is reached from a path, directly or through another component,
    and every reference names a component."""
    doc = document(api_specs(tiers_for("edge", SETTINGS)))
    schemas = doc["components"]["schemas"]
    reached: set[str] = set()
    todo = re.findall(r"schemas/(\w+)'", str(doc["paths"]))
    while todo:
        name = todo.pop()
        assert name in schemas, name
        if name not in reached:
            reached.add(name)
            todo += re.findall(r"schemas/(\w+)'", str(schemas[name]))
    assert reached == set(schemas)
