"""Request parsing shared by the core routes."""

from __future__ import annotations

import re
import uuid

from starlette.requests import Request

from onsale.kernel.problems import Problem

MAX_BODY = 64 * 1024
_ID = re.compile(r"[0-9]{1,19}")  # ASCII only: int() and str.isdigit() take '²' and '٣'


def is_json_media_type(content_type: str | None) -> bool:
    """Whether a Content-Type names JSON: ``application/json`` or
    ``application/<anything>+json``, any parameters (``; charset=utf-8``) allowed."""
    if not content_type:
        return False
    media = content_type.partition(";")[0].strip().lower()
    kind, slash, subtype = media.partition("/")
    return (kind == "application" and slash == "/"
            and (subtype == "json" or (subtype.endswith("+json") and len(subtype) > 5)))


def idempotency_key(request: Request) -> str:
    key = request.headers.get("idempotency-key", "").strip()
    if not key:
        raise Problem(400, "idempotency_key_required")
    if len(key) > 200:
        raise Problem(400, "invalid_request", detail="Idempotency-Key is at most 200 characters.")
    return key


def parse_id(raw: object) -> int | None:
    """A positive bigint id written in ASCII digits (``"42"``), else None: no
    sign, no spaces, no ``_``, no other script's digits (``int("٣") == 3``)."""
    if not isinstance(raw, str) or _ID.fullmatch(raw) is None:
        return None
    value = int(raw)
    return value if 0 < value < 2**63 else None


def parse_uuid(raw: object) -> uuid.UUID | None:
    """A UUID written in ASCII, else None (``uuid.UUID`` reads '٣' as a hex digit 3)."""
    if not isinstance(raw, str) or not raw.isascii():
        return None
    try:
        return uuid.UUID(raw)
    except ValueError:
        return None


def int_path(request: Request, name: str, code: str) -> int:
    """The path parameter ``name`` as an id, or 404 ``code``."""
    value = parse_id(request.path_params[name])
    if value is None:
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
