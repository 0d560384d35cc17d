"""Building blocks of the OpenAPI document, and the document of an app from the parts
its tiers serve (each tier declares an ``ApiSpec``; the composition root merges them)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from onsale.kernel.version import onsale_version


def problem(*codes: str) -> dict[str, Any]:
    return {
        "description": "Problem details; code is one of: " + ", ".join(codes),
        "content": {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}},
        },
    }


def json_body(schema_ref: str, description: str = "OK") -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema_ref}"}}},
    }


def request_body(schema_ref: str, *, required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{schema_ref}"}}}}


def query_parameters(kind: Any) -> list[dict[str, Any]]:
    """The optional query parameters of a Struct's fields, each with its field's schema
    (the route reads them with ``msgspec.convert(..., strict=False)``)."""
    _, schemas = msgspec.json.schema_components([kind])
    out = []
    for name, schema in schemas[kind.__name__]["properties"].items():
        schema = dict(schema)
        described = schema.pop("description", None)
        param = {"name": name, "in": "query", "required": False, "schema": schema}
        out.append(param if described is None else {**param, "description": described})
    return out


EVENT_ID = {"name": "event_id", "in": "path", "required": True, "schema": {"type": "integer"}}

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["type", "title", "status", "code"], "properties": {
        "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
        "code": {"type": "string"}, "detail": {"type": "string"},
        "field": {"type": "string", "description": "The body's top-level field refused"}}}


@dataclass(frozen=True)
class ApiSpec:
    """What one tier serves: its paths and schemas, and the unsafe paths that read
    raw bytes rather than a JSON object (no 415 for those)."""

    name: str
    paths: dict[str, dict[str, Any]]
    schemas: dict[str, Any] = field(default_factory=dict)
    raw_body_paths: tuple[str, ...] = ()


_UNSAFE = ("post", "put", "patch", "delete")


def with_refusals(paths: dict[str, Any], raw_body_paths: Sequence[str] = ()) -> dict[str, Any]:
    """The refusals that come before any route's own code, added to every operation they
    apply to: an unsafe one can be ``403 cross_site_request`` (kernel.security); one that
    reads a JSON body ``415 unsupported_media_type`` and ``413 invalid_request``
    (kernel.bodies); an operator's ``401 admin_required`` and, past the failed-token
    limit, ``429 rate_limited`` (kernel.auth)."""
    out: dict[str, Any] = {}
    for path, item in paths.items():
        out[path] = dict(item)
        for method, op in item.items():
            if method not in _METHODS:
                continue
            responses = dict(op["responses"])
            extra = []
            if method in _UNSAFE:
                extra.append(("403", "cross_site_request"))
            if "requestBody" in op and path not in raw_body_paths:
                extra += [("415", "unsupported_media_type"), ("413", "invalid_request")]
            if {"admin": []} in op.get("security", []):
                extra += [("401", "admin_required"), ("429", "rate_limited")]
            for status, code in extra:
                found = responses.get(status)
                if found is None or "application/problem+json" not in found.get("content", {}):
                    responses[status] = problem(code)
                elif code not in found["description"]:
                    responses[status] = {**found,
                                         "description": f"{found['description']}, {code}"}
            out[path][method] = {**op, "responses": responses}
    return out


_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def operation_id(method: str, path: str) -> str:
    """A stable id from the method and the path, unique because they are:
    ``GET /api/events/{event_id}/queue`` -> ``getEventsByEventIdQueue``."""
    words = []
    for segment in path.strip("/").removeprefix("api/").split("/"):
        if segment.startswith("{"):
            words.append("By" + "".join(p.title() for p in segment.strip("{}").split("_")))
        else:
            words.append("".join(p.title() for p in re.split(r"[_.\-]", segment) if p))
    return method.lower() + "".join(words)


def area(path: str) -> str:
    """The tag of a path: its first segment under /api (``ops`` for the operators'),
    or ``service`` for the process's own (/healthz, /metrics)."""
    parts = path.strip("/").split("/")
    return parts[1] if parts[0] == "api" and len(parts) > 1 else "service"


def _labelled(spec: ApiSpec) -> dict[str, Any]:
    """The spec's operations, each with an ``operationId`` (unless it names one) and its
    tags: the tier that serves it and its area."""
    out: dict[str, Any] = {}
    for path, item in spec.paths.items():
        out[path] = {method: ({**op, "operationId": op.get("operationId")
                               or operation_id(method, path),
                               "tags": op.get("tags") or [spec.name, area(path)]}
                              if method in _METHODS else op)
                     for method, op in item.items()}
    return out


def document(specs: Sequence[ApiSpec]) -> dict[str, Any]:
    """The document of what an app serves (core, the edge, the seat map, or all in dev)."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {"Problem": PROBLEM_SCHEMA}
    raw: list[str] = []
    for spec in specs:
        paths.update(_labelled(spec))
        for name, schema in spec.schemas.items():
            if schemas.setdefault(name, schema) != schema:  # two tiers, one name
                raise ValueError(f"{spec.name} declares another schema named {name}")
        raw += spec.raw_body_paths
    return {
        "openapi": "3.1.0",
        "info": {"title": "onsale API (" + " + ".join(s.name for s in specs) + ")",
                 "version": onsale_version()},
        "paths": with_refusals(paths, raw),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"admin": {"type": "http", "scheme": "bearer"}},
        },
    }


def openapi_route(specs: Sequence[ApiSpec]) -> Route:
    """``GET /openapi.json``: the document, built once."""
    body = document(specs)

    async def openapi(request: Request) -> Response:
        return JSONResponse(body)

    return Route("/openapi.json", openapi, methods=["GET"])


def public_document(specs: Sequence[ApiSpec]) -> dict[str, Any]:
    """The document without the process's own paths (/metrics, /healthz, /readyz,
    /openapi.json: the ops listener's), as the API reference shows it to anyone."""
    doc = document(specs)
    doc["paths"] = {p: item for p, item in doc["paths"].items() if area(p) != "service"}
    doc["info"] = {**doc["info"], "title": "onsale API"}
    return doc


def reference_routes(specs: Sequence[ApiSpec], page: Path) -> list[Route]:
    """``GET /api/reference``: the interactive reference (``page``, a static HTML file
    that loads the vendored renderer), and the public document it renders."""
    body = public_document(specs)

    async def reference(request: Request) -> Response:
        return FileResponse(page, media_type="text/html; charset=utf-8")

    async def reference_document(request: Request) -> Response:
        return JSONResponse(body)

    return [Route("/api/reference", reference, methods=["GET"]),
            Route("/api/reference/openapi.json", reference_document, methods=["GET"])]
