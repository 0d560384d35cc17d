"""Request parsing shared by the core routes."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from core.problems import Problem

MAX_BODY = 64 * 1024


async def json_object(request: Request) -> dict[str, Any]:
    """The body as a JSON object, or 400 ``invalid_json``."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise Problem(413, "invalid_request", detail="The request body is too large.")
    try:
        data = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError):  # deep nesting too
        raise Problem(400, "invalid_json", detail="The body must be a JSON object.") from None
    if not isinstance(data, dict):
        raise Problem(400, "invalid_json", detail="The body must be a JSON object.")
    return data


def idempotency_key(request: Request) -> str:
    key = request.headers.get("idempotency-key", "").strip()
    if not key:
        raise Problem(400, "idempotency_key_required")
    if len(key) > 200:
        raise Problem(400, "invalid_request", detail="Idempotency-Key is at most 200 characters.")
    return key


def int_path(request: Request, name: str, code: str) -> int:
    raw = request.path_params[name]
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise Problem(404, code) from None
    if not 0 < value < 2**63:
        raise Problem(404, code)
    return value


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header admits gzip (``gzip;q=0`` refuses it)."""
    for part in accept_encoding.split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() not in ("gzip", "*"):
            continue
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        return q > 0
    return False


def etag_matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110 weak comparison of If-None-Match against our (strong) etag."""
    if if_none_match.strip() == "*":
        return True
    return any(tag.strip().removeprefix("W/") == etag for tag in if_none_match.split(","))
